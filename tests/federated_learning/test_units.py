"""The pure parts: spec views, worker assignment, status rules, report parsing, access."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from sedna_federated_learning import status as S
from sedna_federated_learning.controller import assign
from sedna_federated_learning.plugin import ACCESS
from sedna_federated_learning.spec import SpecError, job_spec, training_nodes
from sedna_federated_learning.upstream import ReportError, parse_report

from .helpers import sample_job

LABEL = "federatedlearningjob.sedna.io/worker-type"
RBAC = Path(__file__).resolve().parents[2] / "config" / "rbac.yaml"


def _pod(
    name: str, slot: str | None, gen: str = "1", phase: str = "Pending", wtype: str = "train"
) -> dict[str, Any]:
    ann = {} if slot is None else {"sedna-gm.io/fl-worker": slot, "sedna-gm.io/fl-generation": gen}
    return {
        "metadata": {
            "name": name,
            "annotations": ann,
            "labels": {LABEL: wtype},
            "creationTimestamp": f"2026-01-01T00:00:0{name[-1]}Z",
        },
        "status": {"phase": phase},
    }


def test_sample_spec_parses_with_nodes(sample_dir: Path) -> None:
    job = sample_job(sample_dir)
    spec = job_spec(job)
    assert spec.model == "surface-defect-detection-model"
    assert [(w.index, w.node) for w in spec.training] == [(0, "edge1"), (1, "edge2")]
    assert spec.s3 is None and spec.pretrained_model == ""
    assert training_nodes(job) == {"edge1", "edge2"}


def test_a_hostname_selector_names_the_node_too(sample_dir: Path) -> None:
    job = sample_job(sample_dir)
    tspec = job["spec"]["trainingWorkers"][0]["template"]["spec"]
    del tspec["nodeName"]
    tspec["nodeSelector"] = {"kubernetes.io/hostname": "edge7"}
    assert training_nodes(job) == {"edge7", "edge2"}


def test_training_nodes_reads_a_malformed_job_leniently() -> None:
    job = {"spec": {"trainingWorkers": [3, {"template": {"spec": {"nodeName": "e"}}}, {}]}}
    assert training_nodes(job) == {"e"}
    assert training_nodes({"spec": "x"}) == set()


def test_spec_errors_name_the_field() -> None:
    with pytest.raises(SpecError) as exc:
        job_spec({"spec": {"aggregationWorker": {"model": {"name": "m"}, "template": {}}}})
    assert exc.value.field == "spec.aggregationWorker.template.spec"
    with pytest.raises(SpecError, match=r"^spec: required"):
        job_spec({})


def test_assign_keeps_one_pod_per_worker_and_marks_the_rest(sample_dir: Path) -> None:
    spec = job_spec(sample_job(sample_dir))
    pods = [
        _pod("a1", "aggregation", wtype="aggregation"),
        _pod("t2", "training-0"),
        _pod("t3", "training-0", phase="Running"),  # started: kept over the older twin
        _pod("t4", "training-1", gen="0"),  # an older generation
        _pod("t5", None),  # unmarked: adopted into the free slot
        _pod("t6", None),  # no slot left for it
    ]
    out = assign(pods, spec, "1", LABEL)
    assert {k: v["metadata"]["name"] for k, v in out.by_slot.items()} == {
        "aggregation": "a1",
        "training-0": "t3",
        "training-1": "t5",
    }
    assert sorted(p["metadata"]["name"] for p in out.surplus) == ["t2", "t4", "t6"]
    assert list(out.adopted) == ["training-1"]
    deleting = _pod("t7", "training-1")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:09Z"
    assert "training-1" not in assign([deleting], spec, "1", LABEL).by_slot


def test_conditions_are_bounded_and_terminal_ones_stay() -> None:
    conds: list[dict[str, Any]] = []
    S.append_bounded(conds, S.new_condition(S.COMPLETE, "t0"), 3)
    for r in range(1, 6):
        S.append_bounded(
            conds, S.new_condition(S.TRAINING, "t", "DoTraining", S.round_message(r, "x")), 3
        )
    assert [c["type"] for c in conds] == ["Complete", "Training", "Training"]
    assert S.latest_round({"status": {"conditions": conds}}) == 5
    assert S.is_finished({"status": {"conditions": conds}})
    assert not S.is_finished(
        {"status": {"conditions": [S.new_condition(S.FAILED, "t", status="False")]}}
    )


def test_phase_is_pending_until_every_worker_started() -> None:
    running = {"status": {"phase": "Running"}}
    pending = {"status": {}}
    assert S.phase_of([running, running], 3) == "Pending"
    assert S.phase_of([running, pending, running], 3) == "Pending"
    assert S.phase_of([running, {"status": {"phase": "Succeeded"}}, running], 3) == "Running"
    assert S.counts([running, pending, {"status": {"phase": "Failed"}}]) == (2, 0, 1)


def test_reports_parse_like_sedna_and_bad_fields_are_named() -> None:
    r = parse_report(
        {
            "phase": "train",
            "status": "running",
            "output": {
                "models": [{"metrics": {"acc": 0.5}}],
                "ownerInfo": {"currentRound": 4, "updateTime": "now"},
            },
        }
    )
    assert (r.current_round, r.update_time, r.metrics) == (4, "now", {"acc": 0.5})
    assert parse_report({}).current_round == 0
    for content, field in [
        ([], "content"),
        ({"phase": 1}, "phase"),
        ({"output": []}, "output"),
        ({"output": {"ownerInfo": {"currentRound": True}}}, "output.ownerInfo.currentRound"),
        ({"output": {"ownerInfo": {"currentRound": -1}}}, "output.ownerInfo.currentRound"),
        ({"output": {"ownerInfo": {"updateTime": 5}}}, "output.ownerInfo.updateTime"),
        (
            {"output": {"models": [{"metrics": {str(i): i for i in range(101)}}]}},
            "output.models[0].metrics",
        ),
    ]:
        with pytest.raises(ReportError) as exc:
            parse_report(content)
        assert exc.value.field == field


def test_config_rbac_grants_every_call_the_feature_declares() -> None:
    grants: dict[tuple[str, str], set[str]] = {}
    for doc in yaml.safe_load_all(RBAC.read_text()):
        if doc and doc["kind"] == "ClusterRole":
            for rule in doc["rules"]:
                for g in rule["apiGroups"]:
                    for res in rule["resources"]:
                        grants.setdefault((g, res), set()).update(rule["verbs"])

    def allowed(group: str, resource: str, verb: str) -> bool:
        sub = "*/" + resource.split("/", 1)[1] if "/" in resource else "*"
        return any(verb in grants.get((group, r), set()) for r in (resource, sub))

    missing = [
        f"{a.group or 'core'}/{r}: {v}"
        for a in ACCESS
        for r in a.resources
        for v in a.verbs
        if not allowed(a.group, r, v)
    ]
    assert not missing, f"config/rbac.yaml does not grant {missing}"


def test_the_latest_round_is_that_of_the_current_run() -> None:
    def rnd(r: int) -> dict[str, Any]:
        return S.new_condition(S.TRAINING, "t", S.ROUND_REASON, S.round_message(r, "x"))

    def job(conds: list[dict[str, Any]]) -> dict[str, Any]:
        return {"status": {"conditions": conds}}

    assert S.latest_round(job([])) == 0
    old_run = [rnd(1), rnd(3), rnd(2)]
    assert S.latest_round(job(old_run)) == 3
    assert S.latest_round(job([*old_run, S.run_marker("t", "2")])) == 0
    assert S.latest_round(job([*old_run, S.run_marker("t", "2"), rnd(1)])) == 1
    # blocked (False) conditions and malformed messages count for nothing
    odd = [S.new_condition(S.TRAINING, "t", "Missing", "Round 9 x", status="False")]
    odd += [S.new_condition(S.TRAINING, "t", S.ROUND_REASON, "Round two reaches")]
    assert S.latest_round(job([rnd(1), *odd])) == 1
    # bounding drops the marker only after every condition older than it
    conds: list[dict[str, Any]] = []
    for c in [rnd(5), S.run_marker("t", "2"), rnd(1), rnd(2), rnd(3)]:
        S.append_bounded(conds, c, 3)
    assert S.latest_round(job(conds)) == 3
