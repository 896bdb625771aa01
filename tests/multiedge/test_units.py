"""The pure pieces the five plugins share: template checks, report parsing and
recording, stable worker names, the job-style decision."""

from __future__ import annotations

from typing import Any

import pytest

from sedna.runtime import (
    MAX_CONDITION_DATA,
    MAX_OWNER_INFO_KEYS,
    PodsSeen,
    SpecError,
    WorkerReportError,
    check_pod_template,
    checked_template,
    job_decision,
    optional_count,
    parse_owner_info_report,
    record_in_latest_condition,
    record_metrics,
    service_host,
    stable_worker_name,
    worker_on_node,
)

OWNER = {
    "apiVersion": "sedna.io/v1alpha1",
    "kind": "ReidJob",
    "metadata": {"name": "Job-A", "namespace": "ns", "uid": "u-1"},
}


def tmpl(**container: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "w", "image": "i", **container}]}}


@pytest.mark.parametrize(
    ("template", "field"),
    [
        ([], "t"),
        ({"spec": None}, "t.spec"),
        ({"spec": {"containers": []}}, "t.spec.containers"),
        ({"spec": {"containers": ["x"]}}, "t.spec.containers[0]"),
        (tmpl(name="Worker"), "t.spec.containers[0].name"),
        (tmpl(name="a_b"), "t.spec.containers[0].name"),
        (tmpl(env={"A": "1"}), "t.spec.containers[0].env"),
        (tmpl(env=[{"value": "1"}]), "t.spec.containers[0].env[0].name"),
        (tmpl(env=[{"name": "A", "value": ["1"]}]), "t.spec.containers[0].env[0].value"),
        (tmpl(env=[{"name": "A", "value": 1}]), "t.spec.containers[0].env[0].value"),
        (tmpl(env=[{"name": "A", "valueFrom": "x"}]), "t.spec.containers[0].env[0].valueFrom"),
        (tmpl(command="run"), "t.spec.containers[0].command"),
        (tmpl(args=[1]), "t.spec.containers[0].args"),
        (tmpl(image=3), "t.spec.containers[0].image"),
        ({"metadata": {"labels": {"a": 1}}, **tmpl()}, "t.metadata.labels"),
        ({"spec": {**tmpl()["spec"], "nodeSelector": {"a": ["b"]}}}, "t.spec.nodeSelector"),
        (
            {"spec": {**tmpl()["spec"], "initContainers": [{"name": "X"}]}},
            "t.spec.initContainers[0].name",
        ),
    ],
)
def test_check_pod_template_names_the_first_wrong_field(template: Any, field: str) -> None:
    found = check_pod_template(template, "t")
    assert found is not None and found[0] == field
    with pytest.raises(SpecError) as exc:
        checked_template(template, "t")
    assert exc.value.field.startswith("t")


def test_check_pod_template_accepts_good_templates() -> None:
    good = tmpl(
        env=[{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"secretKeyRef": {}}}],
        command=["python"],
        args=["-m", "x"],
    )
    assert check_pod_template(good, "t") is None
    assert checked_template(good, "t") is good


def test_optional_count() -> None:
    assert optional_count(None, "f") is None
    assert optional_count(None, "f", default=1) == 1
    assert optional_count(0, "f") == 0
    for bad in (True, "1", -1, 1.5):
        with pytest.raises(SpecError):
            optional_count(bad, "f")


def test_stable_worker_names_are_stable_and_distinct() -> None:
    a = stable_worker_name(OWNER, "trackingworker-", 0)
    assert a == stable_worker_name(OWNER, "trackingworker-", 0)
    assert a != stable_worker_name(OWNER, "trackingworker-", 1)
    other = {**OWNER, "metadata": {**OWNER["metadata"], "uid": "u-2"}}
    assert a != stable_worker_name(other, "trackingworker-", 0)
    assert len(stable_worker_name(OWNER, "")) == 5


def test_service_host_is_sednas() -> None:
    assert service_host(OWNER, "reidWorker") == "job-a-reidworker.ns"


def test_parse_owner_info_report() -> None:
    r = parse_owner_info_report(
        {"phase": "inference", "status": "ok", "output": {"ownerInfo": {"a": 1, "startTime": "x"}}}
    )
    assert (r.phase, r.status, dict(r.owner_info or {})) == ("inference", "ok", {"a": 1})
    assert parse_owner_info_report({}).owner_info is None
    assert parse_owner_info_report({"output": {}}).owner_info is None
    for content, field in [
        ([], "content"),
        ({"phase": 1}, "content.phase"),
        ({"status": {}}, "content.status"),
        ({"output": []}, "content.output"),
        ({"output": {"ownerInfo": "x"}}, "content.output.ownerInfo"),
        (
            {"output": {"ownerInfo": {str(i): i for i in range(MAX_OWNER_INFO_KEYS + 1)}}},
            "content.output.ownerInfo",
        ),
    ]:
        with pytest.raises(WorkerReportError) as exc:
            parse_owner_info_report(content)
        assert exc.value.field == field


def test_record_metrics_and_condition_data() -> None:
    report = parse_owner_info_report({"output": {"ownerInfo": {"n": 2, "s": "x"}}})
    status: dict[str, Any] = {}
    assert record_metrics(status, report, "now")
    assert status["metrics"] == [{"key": "n", "value": "2"}, {"key": "s", "value": "x"}]
    assert not record_metrics(status, report, "now")

    status = {}
    assert record_in_latest_condition(status, report, "now")  # no condition yet: Running
    assert status["conditions"] == [
        {
            "type": "Running",
            "status": "True",
            "reason": "WorkerRunning",
            "lastHeartbeatTime": "now",
            "lastTransitionTime": "now",
            "data": '{"n":2,"s":"x"}',
        }
    ]
    status = {
        "conditions": [{"type": "Running", "reason": "r"}, {"type": "Running", "reason": "q"}]
    }
    assert record_in_latest_condition(status, report, "now")
    assert status["conditions"][-1]["data"] == '{"n":2,"s":"x"}'
    assert status["conditions"][-1]["lastHeartbeatTime"] == "now"
    assert "data" not in status["conditions"][0]
    assert not record_in_latest_condition(status, report, "later")
    big = parse_owner_info_report({"output": {"ownerInfo": {"x": "y" * MAX_CONDITION_DATA}}})
    with pytest.raises(WorkerReportError):
        record_in_latest_condition(status, big, "now")


def test_worker_on_node() -> None:
    labels = {"reidjob.sedna.io/name": "Job-A", "reidjob.sedna.io/uid": "u-1"}
    pod = {"metadata": {"labels": labels}, "spec": {"nodeName": "edge0"}}
    stranger = {"metadata": {"labels": {}}, "spec": {"nodeName": "edge1"}}
    assert worker_on_node(OWNER, [stranger, pod], "edge0")
    assert not worker_on_node(OWNER, [pod, stranger], "edge1")


def test_job_decision() -> None:
    running = job_decision(OWNER, PodsSeen(active=1), "now")
    assert (running.condition, running.extra["phase"]) == ("", "Running")  # no condition
    waited = {**OWNER, "status": {"conditions": [{"type": "Pending", "reason": "ModelNotFound"}]}}
    over = job_decision(waited, PodsSeen(active=1), "now")
    assert (over.condition, over.reason, over.extra["phase"]) == (
        "Running",
        "WorkerRunning",
        "Running",
    )
    done = job_decision(OWNER, PodsSeen(succeeded=1), "now")
    assert (done.condition, done.extra["phase"], done.extra["completionTime"]) == (
        "Completed",
        "Succeeded",
        "now",
    )
    failed = job_decision(OWNER, PodsSeen(failed=1, failed_messages=["pod p: Error"]), "now")
    assert (failed.condition, failed.failed, failed.extra["phase"]) == ("Failed", 1, "Failed")
    # a completed job keeps its status whatever its pods do now
    completed = {
        **OWNER,
        "status": {"conditions": [{"type": "Completed"}], "succeeded": 1, "active": 0},
    }
    kept = job_decision(completed, PodsSeen(), "later")
    assert (kept.condition, kept.extra["succeeded"]) == ("Completed", 1)
    assert "completionTime" not in kept.extra
