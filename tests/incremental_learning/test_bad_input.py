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


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (_no_dataset_name, "spec.dataset.name: required field is missing"),
        (_no_containers, "spec.trainSpec.template.spec.containers: the pod template needs"),
        (_wrong_type, "spec.deploySpec.model.hotUpdateEnabled: Input should be a valid boolean"),
    ],
    ids=["missing-dataset-name", "no-containers", "wrong-type"],
)
def test_invalid_job_gets_an_event_naming_the_field(
    mutate: Callable[[dict[str, Any]], None],
    field: str,
    api: Api,
    make_gm: GMFactory,
    sedna_reference: Path,
    logs: LogCapture,
) -> None:
    make_gm()
    create_dependencies(api, sedna_reference)
    bad = sample_job(sedna_reference, name="bad-job")
    mutate(bad)
    api.create(bad)
    api.create(sample_job(sedna_reference))
    msg = api.wait_event("InvalidSpec", field, name="bad-job")
    assert field in msg
    assert logs.contains(f"{api.ns}/bad-job", "InvalidSpec", field)
    # the other job is not held up
    api.wait_latest("Train/Waiting")
    assert api.worker_pods("inference", name="bad-job") == []
    assert api.states("bad-job") == []


def test_report_for_unknown_job_is_logged_and_the_connection_goes_on(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sedna_reference: Path, logs: LogCapture
) -> None:
    # the handler's own check: the message layer would refuse an unrouted report first
    gm = make_gm(websocket={"authorizeReports": False})
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sedna_reference)
    lc.report(api.ns, "train", "ready", name="no-such-job", input=TRAIN_INPUT)
    wait_until(
        lambda: logs.contains(f"node {DS_NODE}", f"{api.ns}/no-such-job", "no such job"),
        what="log line for the unknown job",
    )
    start_stage(api, lc, "train", TRAIN_INPUT)


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"phase": "predict", "status": "ready"}, "content.phase: invalid value 'predict'"),
        ({"phase": "train", "status": "done"}, "content.status: invalid value 'done'"),
        ({"phase": "train", "status": "ready", "input": {"models": 3}}, "content.input.models"),
    ],
    ids=["phase", "status", "input"],
)
def test_invalid_report_is_an_error_for_that_message_only(
    payload: dict[str, Any],
    field: str,
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    sedna_reference: Path,
    logs: LogCapture,
) -> None:
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sedna_reference)
    lc.report(api.ns, "", "", payload=payload)
    msg = api.wait_event("InvalidReport", field)
    assert f"node {DS_NODE}" in msg
    assert logs.contains(f"{api.ns}/{JOB}", field)
    assert api.states() == ["Train/Waiting"]
    start_stage(api, lc, "train", TRAIN_INPUT)


def test_condition_data_that_is_not_json(
    api: Api, make_gm: GMFactory, sedna_reference: Path
) -> None:
    gm = make_gm()
    start_sample_job(api, sedna_reference)
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


BIG_URL = "s3://bucket/" + "a" * 100_000
LONG_MODEL = {"format": "pb", "url": "/models/" + "m" * 4000, "metrics": {"precision": 0.9}}


@pytest.mark.parametrize(
    ("payload", "field"),
    [
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
    ids=["data-url", "model-url", "total"],
)
def test_oversized_report_is_refused_and_the_status_does_not_grow(
    payload: dict[str, Any],
    field: str,
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    sedna_reference: Path,
    logs: LogCapture,
) -> None:
    """Sedna appends any report as it is: a few of these made the job too big to write."""
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sedna_reference)
    before = api.job()["status"]
    lc.report(api.ns, "", "", payload=payload)
    msg = api.wait_event("InvalidReport", field)
    assert f"node {DS_NODE}" in msg
    assert logs.contains(f"{api.ns}/{JOB}", field)
    assert gm.controller.wait_idle(5.0)
    assert api.job()["status"] == before
    start_stage(api, lc, "train", TRAIN_INPUT)


def test_honest_reports_with_several_models_and_metrics_land(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sedna_reference: Path
) -> None:
    """The bound leaves room: three models with long object-store URLs and metrics."""
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sedna_reference)
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
