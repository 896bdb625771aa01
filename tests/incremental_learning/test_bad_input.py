"""Bad input gets a clear Event or log line naming the job and the field; others go on."""

from __future__ import annotations

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
