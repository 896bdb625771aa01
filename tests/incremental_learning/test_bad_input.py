"""Bad input gets a clear Event or log line naming the job and the field; others go on."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import GMFactory, LCFactory
from .helpers import (
    DS_NODE,
    JOB,
    Api,
    LogCapture,
    create_dependencies,
    sample_job,
    start_sample_job,
    start_stage,
    wait_until,
)

TRAIN_INPUT = {"models": [{"url": "/model/frozen.pb"}], "dataURL": "/d", "outputDir": "/o"}


def _no_dataset_name(job: dict[str, Any]) -> None:
    del job["spec"]["dataset"]["name"]


def _no_containers(job: dict[str, Any]) -> None:
    job["spec"]["trainSpec"]["template"]["spec"]["containers"] = []


def _wrong_type(job: dict[str, Any]) -> None:
    job["spec"]["deploySpec"]["model"]["hotUpdateEnabled"] = "yes"


def _train_operator(job: dict[str, Any]) -> None:
    job["spec"]["trainSpec"]["trigger"]["condition"]["operator"] = "~"


def _deploy_operator(job: dict[str, Any]) -> None:
    job["spec"]["deploySpec"]["trigger"]["condition"]["operator"] = "bigger"


def _timer_start(job: dict[str, Any]) -> None:
    job["spec"]["trainSpec"]["trigger"]["timer"]["start"] = "25:99"


def _timer_end(job: dict[str, Any]) -> None:
    job["spec"]["trainSpec"]["trigger"]["timer"]["end"] = "7:30"


def _check_period(job: dict[str, Any]) -> None:
    job["spec"]["trainSpec"]["trigger"]["checkPeriodSeconds"] = -5


def _no_train_trigger(job: dict[str, Any]) -> None:
    del job["spec"]["trainSpec"]["trigger"]


def _train_container(job: dict[str, Any]) -> None:
    job["spec"]["trainSpec"]["template"]["spec"]["containers"][0]["name"] = "Bad_Name"


def _eval_container(job: dict[str, Any]) -> None:
    job["spec"]["evalSpec"]["template"]["spec"]["containers"][0]["name"] = "eval.worker"


def _deploy_container(job: dict[str, Any]) -> None:
    job["spec"]["deploySpec"]["template"]["spec"]["containers"][0]["name"] = "Bad_Name"


OPERATORS = "(supported: >, <, =, >=, <=, !=, ==, gt, lt, eq, ge, le, ne)"
RFC1123 = "is not a lowercase RFC 1123 label"


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (_no_dataset_name, "spec.dataset.name: required field is missing"),
        (_no_containers, "spec.trainSpec.template.spec.containers: the pod template needs"),
        (_wrong_type, "spec.deploySpec.model.hotUpdateEnabled: Input should be a valid boolean"),
        (
            _train_operator,
            f'spec.trainSpec.trigger.condition.operator: unsupported operator "~" {OPERATORS}',
        ),
        (_deploy_operator, 'spec.deploySpec.trigger.condition.operator: unsupported operator "bi'),
        (_timer_start, 'spec.trainSpec.trigger.timer.start: expected a time of day "HH:MM"'),
        (_timer_end, 'spec.trainSpec.trigger.timer.end: expected a time of day "HH:MM" (00:00-2'),
        (_check_period, "spec.trainSpec.trigger.checkPeriodSeconds: must be a positive number"),
        (_no_train_trigger, "spec.trainSpec.trigger: required field is missing"),
        (
            _train_container,
            f"spec.trainSpec.template.spec.containers[0].name: 'Bad_Name' {RFC1123}",
        ),
        (
            _eval_container,
            f"spec.evalSpec.template.spec.containers[0].name: 'eval.worker' {RFC1123}",
        ),
        (
            _deploy_container,
            f"spec.deploySpec.template.spec.containers[0].name: 'Bad_Name' {RFC1123}",
        ),
    ],
    ids=[
        "missing-dataset-name",
        "no-containers",
        "wrong-type",
        "train-operator",
        "deploy-operator",
        "timer-start",
        "timer-end",
        "check-period",
        "no-train-trigger",
        "train-container-name",
        "eval-container-name",
        "deploy-container-name",
    ],
)
def test_invalid_job_gets_an_event_and_a_condition_naming_the_field(
    mutate: Callable[[dict[str, Any]], None],
    field: str,
    api: Api,
    make_gm: GMFactory,
    sample_dir: Path,
    logs: LogCapture,
) -> None:
    gm = make_gm()
    create_dependencies(api, sample_dir)
    bad = sample_job(sample_dir, name="bad-job")
    mutate(bad)
    api.create(bad)
    api.create(sample_job(sample_dir))
    msg = api.wait_event("InvalidSpec", field, name="bad-job")
    assert field in msg
    assert logs.contains(f"{api.ns}/bad-job", "InvalidSpec", field)
    # `kubectl get il` shows the state and `describe` the field, as for a missing input
    waiting = wait_until(
        lambda: (c := api.conditions("bad-job")) and c[-1].get("reason") == "InvalidSpec" and c[-1],
        what="the waiting condition naming the field",
    )
    assert (waiting["stage"], waiting["type"]) == ("Train", "Waiting")
    assert field in waiting["message"]
    # the other job is not held up; the bad one gets no worker
    api.wait_latest("Train/Waiting")
    assert gm.controller.wait_idle(5.0)
    assert api.worker_pods("inference", name="bad-job") == []
    assert api.states("bad-job") == ["Train/Waiting"]
    assert "startTime" not in api.job("bad-job").get("status", {})


def _fix_operator(api: Api) -> None:
    fixed = {"condition": {"operator": ">", "threshold": 500, "metric": "num_of_samples"}}
    api.jobs.patch(api.ns, JOB, {"spec": {"trainSpec": {"trigger": fixed}}})


def _fix_container(api: Api) -> None:
    job = api.job()
    job["spec"]["deploySpec"]["template"]["spec"]["containers"][0]["name"] = "infer-worker"
    api.jobs.replace(api.ns, JOB, job)


@pytest.mark.parametrize(
    ("mutate", "fix", "field"),
    [
        (_train_operator, _fix_operator, "spec.trainSpec.trigger.condition.operator"),
        (_deploy_container, _fix_container, "spec.deploySpec.template.spec.containers[0].name"),
    ],
    ids=["operator", "container-name"],
)
def test_a_fixed_spec_starts_the_job(
    mutate: Callable[[dict[str, Any]], None],
    fix: Callable[[Api], None],
    field: str,
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    sample_dir: Path,
) -> None:
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    create_dependencies(api, sample_dir)
    bad = sample_job(sample_dir)
    mutate(bad)
    api.create(bad)
    api.wait_event("InvalidSpec", field)
    wait_until(
        lambda: (c := api.conditions()) and c[-1].get("reason") == "InvalidSpec",
        what="the waiting condition naming the field",
    )
    fix(api)
    # the note goes, the first sync's work is done and the job runs its cycle
    wait_until(lambda: api.live_pods("inference"), what="the inference worker")
    wait_until(
        lambda: "reason" not in api.conditions()[-1] and api.job()["status"].get("startTime"),
        what="the note cleared and the job started",
    )
    assert api.states() == ["Train/Waiting"]
    start_stage(api, lc, "train", TRAIN_INPUT)


def test_an_edit_breaking_a_running_job_is_named_and_its_fix_clears_it(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    start_stage(api, lc, "train", TRAIN_INPUT)
    api.jobs.patch(api.ns, JOB, {"spec": {"deploySpec": {"trigger": {"checkPeriodSeconds": -1}}}})
    field = "spec.deploySpec.trigger.checkPeriodSeconds"
    api.wait_event("InvalidSpec", field)
    noted = wait_until(
        lambda: (c := api.conditions()[-1]).get("reason") == "InvalidSpec" and c,
        what="the latest condition naming the field",
    )
    assert noted["type"] == "Starting" and field in noted["message"]
    api.jobs.patch(api.ns, JOB, {"spec": {"deploySpec": {"trigger": {"checkPeriodSeconds": 0}}}})
    wait_until(lambda: "reason" not in api.conditions()[-1], what="the note cleared")
    assert api.latest() == "Train/Starting"
    (pod,) = api.live_pods("train")
    api.set_phase_and_wait(pod["metadata"]["name"], "Running", "Train/Running")


def test_report_for_unknown_job_is_logged_and_the_connection_goes_on(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path, logs: LogCapture
) -> None:
    # the handler's own check: the message layer would refuse an unrouted report first
    gm = make_gm(websocket={"authorizeReports": False})
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    lc.report(api.ns, "train", "ready", name="no-such-job", input=TRAIN_INPUT)
    wait_until(
        lambda: logs.contains(f"node {DS_NODE}", f"{api.ns}/no-such-job", "no such job"),
        what="log line for the unknown job",
    )
    start_stage(api, lc, "train", TRAIN_INPUT)


BIG_URL = "s3://bucket/" + "a" * 100_000
LONG_MODEL = {"format": "pb", "url": "/models/" + "m" * 4000, "metrics": {"precision": 0.9}}


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"phase": "predict", "status": "ready"}, "content.phase: invalid value 'predict'"),
        ({"phase": "train", "status": "done"}, "content.status: invalid value 'done'"),
        ({"phase": "train", "status": "ready", "input": {"models": 3}}, "content.input.models"),
        # Sedna appends any report as it is: a few of these made the job too big to write
        (
            {"phase": "train", "status": "ready", "input": {**TRAIN_INPUT, "dataURL": BIG_URL}},
            "content.input.dataURL: too long (100012 characters, at most 4096)",
        ),
        (
            {"phase": "train", "status": "completed", "output": {"models": [{"url": BIG_URL}]}},
            "content.output.models.0.url: too long",
        ),
        (
            {"phase": "eval", "status": "ready", "input": {"models": [LONG_MODEL] * 3}},
            "content.input.models: the report's condition data is",
        ),
    ],
    ids=["phase", "status", "input", "data-url", "model-url", "total"],
)
def test_invalid_report_is_an_error_for_that_message_only(
    payload: dict[str, Any],
    field: str,
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    sample_dir: Path,
    logs: LogCapture,
) -> None:
    """Malformed or oversized: an Event and a log line naming the field, the status as it
    was (it does not grow), and the next report still lands."""
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    before = api.job()["status"]
    lc.report(api.ns, "", "", payload=payload)
    msg = api.wait_event("InvalidReport", field)
    assert f"node {DS_NODE}" in msg
    assert logs.contains(f"{api.ns}/{JOB}", field)
    assert gm.controller.wait_idle(5.0)
    assert api.job()["status"] == before
    assert api.states() == ["Train/Waiting"]
    start_stage(api, lc, "train", TRAIN_INPUT)


def test_condition_data_that_is_not_json(api: Api, make_gm: GMFactory, sample_dir: Path) -> None:
    gm = make_gm()
    start_sample_job(api, sample_dir)
    job = api.job()
    conds = job["status"]["conditions"]
    conds.append({**conds[-1], "type": "Ready", "data": "{not json"})
    api.jobs.replace_status(api.ns, JOB, job)
    msg = api.wait_event("InvalidConditionData", "status.conditions[1].data: not JSON")
    assert msg.startswith("status.conditions[1].data")
    wait_until(lambda: api.conditions()[-1].get("reason") == "InvalidConditionData")
    assert gm.controller.wait_idle(5.0)
    assert api.worker_pods("train") == []
    assert api.latest() == "Train/Ready"


def test_honest_reports_with_several_models_and_metrics_land(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    """The bound leaves room: three models with long object-store URLs and metrics."""
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    models = [
        {
            "format": "pb",
            "url": f"s3://kubeedge-sedna/helmet-detection/output/train/{i}/"
            + "x" * 200
            + "/model.pb",
            "metrics": {"precision": 0.91, "recall": 0.87, "f1": 0.89, "map_50": 0.8},
        }
        for i in range(3)
    ]
    train_input = {**TRAIN_INPUT, "models": models, "dataIndexURL": "s3://b/" + "i" * 500}
    start_stage(api, lc, "train", train_input)
    ready = [c for c in api.conditions() if (c["stage"], c["type"]) == ("Train", "Ready")]
    data = json.loads(ready[-1]["data"])
    assert len(ready[-1]["data"]) > 1500
    assert [m["url"] for m in data["input"]["models"]] == [m["url"] for m in models]
    assert data["input"]["models"][2]["metrics"]["map_50"] == 0.8


def test_a_job_whose_worker_the_api_server_refuses_says_so(
    api: Api, make_gm: GMFactory, sample_dir: Path
) -> None:
    """A 253-character name leaves no room for `<job>-inference-` (kube's generateName is a
    name too): Sedna's GM retries for ever, with no Event (its name was too long as well)
    and no condition. Ours writes both, and waits for a new spec instead of retrying."""
    make_gm()
    create_dependencies(api, sample_dir)
    name = ("a" * 60 + ".") * 4 + "b" * 8
    assert len(name) == 252
    api.create(sample_job(sample_dir, name=name))
    msg = api.wait_event("WorkerInvalid", "metadata.generateName", name=name)
    assert "the API server refused the inference worker" in msg
    waiting = wait_until(
        lambda: (c := api.conditions(name)) and c[-1].get("reason") == "WorkerInvalid" and c[-1],
        what="the waiting condition saying why",
    )
    assert (waiting["stage"], waiting["type"]) == ("Train", "Waiting")
    assert "generateName" in waiting["message"]
    (event,) = [e for e in api.events_of(name) if e["reason"] == "WorkerInvalid"]
    assert len(event["metadata"]["name"]) <= 253
    assert event["involvedObject"]["name"] == name
