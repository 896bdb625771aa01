"""Bad input gets a clear answer and nothing else is disturbed: malformed specs, missing
Models and Datasets and secrets get a Warning Event and a condition naming the field;
malformed or misdirected LC reports get a log line naming node, kind and name."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sedna_federated_learning.controller import CONFLICT_RECHECK_SECONDS

from sedna.runtime import FakeClock

from .conftest import GMFactory, LCFactory
from .helpers import (
    JOB,
    MODEL,
    NODES,
    Api,
    LogCapture,
    model,
    sample_job,
    started_job,
    wait_until,
)

Mutation = Callable[[dict[str, Any]], None]


def _within(pred: Callable[[], bool], seconds: float) -> bool:
    """Whether `pred` holds within `seconds` of real time."""
    try:
        wait_until(pred, seconds, "")
    except AssertionError:
        return False
    return True


def _drop_workers(spec: dict[str, Any]) -> None:
    del spec["trainingWorkers"]


def _set(path: str, value: Any) -> Mutation:
    def mutate(spec: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = spec
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


MALFORMED: list[tuple[str, Mutation, str, str]] = [
    ("no workers", _drop_workers, "spec.trainingWorkers", "required"),
    ("empty workers", _set("trainingWorkers", []), "spec.trainingWorkers", "at least one"),
    ("workers not a list", _set("trainingWorkers", "edge1"), "spec.trainingWorkers", "list"),
    ("worker not an object", _set("trainingWorkers.1", 7), "spec.trainingWorkers[1]", "object"),
    (
        "dataset name a number",
        _set("trainingWorkers.0.dataset.name", 3),
        "spec.trainingWorkers[0].dataset.name",
        "string",
    ),
    (
        "no containers",
        _set("trainingWorkers.1.template.spec.containers", []),
        "spec.trainingWorkers[1].template.spec.containers",
        "at least one",
    ),
    (
        "nodeName a list",
        _set("trainingWorkers.0.template.spec.nodeName", ["edge1"]),
        "spec.trainingWorkers[0].template.spec.nodeName",
        "string",
    ),
    (
        "no aggregation model",
        _set("aggregationWorker.model", {}),
        "spec.aggregationWorker.model.name",
        "required",
    ),
    (
        "aggregator template a string",
        _set("aggregationWorker.template", "pod"),
        "spec.aggregationWorker.template",
        "object",
    ),
    ("no aggregator", _set("aggregationWorker", None), "spec.aggregationWorker", "required"),
    (
        "s3 without a path",
        _set("transmitter", {"s3": {"credentialName": "x"}}),
        "spec.transmitter.s3.aggDataPath",
        "required",
    ),
]


@pytest.mark.parametrize(
    ("mutate", "field", "reason"),
    [m[1:] for m in MALFORMED],
    ids=[m[0] for m in MALFORMED],
)
def test_a_malformed_spec_gets_an_event_and_a_condition_naming_the_field(
    api: Api,
    make_gm: GMFactory,
    sample_dir: Path,
    mutate: Mutation,
    field: str,
    reason: str,
) -> None:
    good = sample_job(sample_dir)
    api.inputs(good)
    bad = copy.deepcopy(good)
    mutate(bad["spec"])
    make_gm()
    api.create(bad)
    message = api.wait_event("InvalidSpec", field)
    assert reason in message
    cond = api.conditions()[-1]
    assert (cond["type"], cond["status"], cond["reason"]) == ("Training", "False", "InvalidSpec")
    assert cond["message"].startswith(f"{field}: ")
    assert api.phase() == "Pending" and api.status()["startTime"]
    assert api.live_pods() == []
    # fixed, the job starts
    api.fl.patch(api.ns, JOB, {"spec": {**good["spec"], "transmitter": None}})
    api.wait_workers(3)


def test_a_missing_model_is_named_and_the_job_starts_when_it_appears(
    api: Api, make_gm: GMFactory, sample_dir: Path
) -> None:
    job = sample_job(sample_dir)
    api.inputs(job)
    api.models.delete(api.ns, MODEL)
    make_gm()
    api.create(job)
    message = api.wait_event("MissingModel", "spec.aggregationWorker.model.name")
    assert MODEL in message
    assert api.conditions()[-1]["reason"] == "MissingModel"
    assert api.live_pods() == []
    api.create(model())
    api.wait_workers(3)
    api.wait_phase("Pending")
    # one Event and one condition for the problem, not one per sync
    assert [r for _, r, _ in api.event_list()].count("MissingModel") == 1


def test_a_missing_dataset_names_its_worker(api: Api, make_gm: GMFactory, sample_dir: Path) -> None:
    job = sample_job(sample_dir)
    api.inputs(job)
    api.datasets.delete(api.ns, "edge2-surface-defect-detection-dataset")
    make_gm()
    api.create(job)
    api.wait_event("MissingDataset", "spec.trainingWorkers[1].dataset.name")
    assert api.live_pods() == []


def test_a_missing_transmitter_secret_is_retried_and_named(
    api: Api, make_gm: GMFactory, sample_dir: Path
) -> None:
    job = sample_job(sample_dir)
    job["spec"]["transmitter"] = {"s3": {"aggDataPath": "s3://fl/agg", "credentialName": "nope"}}
    api.inputs(job)
    make_gm()
    api.create(job)
    message = api.wait_event("WorkerCreateFailed", "nope")
    assert "spec.transmitter.s3.credentialName" in message
    assert api.conditions()[-1]["reason"] == "WorkerCreateFailed"


def test_bad_reports_are_logged_and_change_nothing(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path, logs: LogCapture
) -> None:
    job = sample_job(sample_dir)
    api.inputs(job)
    # the handler's own checks: the message layer would refuse the stranger's report first
    gm = make_gm(websocket={"authorizeReports": False})
    edge1 = make_lc(gm, NODES[0])
    stranger = make_lc(gm, "edge9")
    api.create(job)
    edge1.wait_for("insert")
    api.wait_workers(3)
    where = f"report from node edge1 for FederatedLearningJob {api.ns}/{JOB}"

    edge1.report(api.ns, {"output": {"ownerInfo": {"currentRound": "two"}}})
    logs.wait(where, "content.output.ownerInfo.currentRound")
    api.wait_event("InvalidReport", "currentRound")
    edge1.report(api.ns, {"output": {"models": {"metrics": 1}}})
    logs.wait(where, "content.output.models: must be a list")
    edge1.report(api.ns, {"output": {"models": [{"metrics": [1]}]}})
    logs.wait(where, "content.output.models[0].metrics: must be an object")
    # a node that trains nothing of this job
    stranger.report_round(api.ns, 1)
    logs.wait("report from node edge9", "not a training node of the job")
    # a job that does not exist
    edge1.report(api.ns, {"output": {}}, name="no-such-job")
    logs.wait("node edge1", f"{api.ns}/no-such-job", "no such job")
    # and the connection still works
    edge1.report_round(api.ns, 1)
    wait_until(lambda: any(c["type"] == "Training" for c in api.conditions()))
    assert [c["message"][:8] for c in api.conditions()] == ["Round 1 "]
    assert "metrics" not in (api.models.get(api.ns, MODEL).get("status") or {})


def test_reports_for_a_finished_job_still_reach_the_model(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    """The aggregated model's metrics may come after the last pod exits."""
    job = sample_job(sample_dir)
    api.inputs(job)
    gm = make_gm()
    edge1 = make_lc(gm, NODES[0])
    api.create(job)
    api.wait_workers(3)
    api.set_all("Succeeded")
    api.wait_phase("Succeeded")
    edge1.report_round(api.ns, 3, {"accuracy": 0.9})
    wait_until(lambda: (api.models.get(api.ns, MODEL).get("status") or {}).get("metrics"))
    assert api.phase() == "Succeeded"


def test_options_are_validated_by_name(api: Api, sample_dir: Path) -> None:
    from sedna_federated_learning.plugin import validate_options

    from sedna.runtime import FeatureOptionsError

    assert validate_options({}).maxConditions == 50
    with pytest.raises(FeatureOptionsError, match="maxConditions"):
        validate_options({"maxConditions": 1})
    with pytest.raises(FeatureOptionsError, match="maxCondition: unknown option"):
        validate_options({"maxCondition": 10})


def test_a_worker_that_the_runtime_rejects_is_reported(
    api: Api, make_gm: GMFactory, sample_dir: Path
) -> None:
    """Started, then broken by an edit: the old workers stay, the job says why."""
    started_job(api, make_gm, sample_dir)
    api.fl.patch(api.ns, JOB, {"spec": {"trainingWorkers": "none"}})
    api.wait_event("InvalidSpec", "spec.trainingWorkers")
    assert len(api.live_pods()) == 3


def test_a_service_of_the_aggregators_name_that_is_not_ours_blocks_the_job(
    api: Api, make_gm: GMFactory, sample_dir: Path
) -> None:
    job = sample_job(sample_dir)
    api.inputs(job)
    foreign = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"{JOB}-aggregation"},
        "spec": {"ports": [{"port": 80}]},
    }
    api.services.create(api.ns, foreign)
    clock = FakeClock()
    make_gm(clock=clock)
    api.create(job)
    message = api.wait_event("ServiceConflict", f"{JOB}-aggregation")
    assert "not controlled by this job" in message
    assert api.conditions()[-1]["reason"] == "ServiceConflict"
    assert api.live_pods() == []
    # the foreign Service is not cached (no label of these jobs): its going is found by
    # the conflict's recheck, in virtual time
    api.services.delete(api.ns, f"{JOB}-aggregation")
    # virtual time far below a resync (an hour here): only the recheck can find it gone
    for _ in range(int(4 * CONFLICT_RECHECK_SECONDS)):
        clock.step(1.0)
        if _within(lambda: len(api.live_pods()) == 3, 0.25):
            break
    assert len(api.live_pods()) == 3, "the workers are made after the conflict's recheck"
    svc = api.services.get(api.ns, f"{JOB}-aggregation")
    assert svc["metadata"]["ownerReferences"][0]["kind"] == "FederatedLearningJob"


def test_a_model_deleted_while_the_job_runs_does_not_stop_it(
    api: Api, make_gm: GMFactory, sample_dir: Path
) -> None:
    """Inputs are read only to make a worker (as Sedna does); the status goes on."""
    started_job(api, make_gm, sample_dir)
    api.models.delete(api.ns, MODEL)
    api.set_all("Running")
    api.wait_phase("Running")
    api.set_all("Succeeded")
    api.wait_phase("Succeeded")
    assert not any(c.get("reason") == "MissingModel" for c in api.conditions())
