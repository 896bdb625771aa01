"""Bad LL specs and bad LL reports: a clear Event or log line naming the field; others go on."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import GMFactory, LCFactory
from .helpers import (
    DS_NODE,
    JOB,
    KB_MODEL,
    KIND,
    TRAIN_INPUT,
    Api,
    LogCapture,
    run_stage,
    sample_dataset,
    sample_job,
    start_sample_job,
    wait_until,
)

BIG_URL_MODEL = {**KB_MODEL, "url": "s3://b/" + "m" * 100_000}
MANY_TASKS_MODEL = {
    **KB_MODEL,
    "current_metric": {f"task-{i:04}": {"precision_score": 0.8} for i in range(400)},
}


def _no_output_dir(job: dict[str, Any]) -> None:
    del job["spec"]["outputDir"]


def _no_containers(job: dict[str, Any]) -> None:
    job["spec"]["deploySpec"]["template"]["spec"]["containers"] = []


def _bad_operator(job: dict[str, Any]) -> None:
    job["spec"]["trainSpec"]["trigger"]["condition"]["operator"] = "more than"


def _bad_timer(job: dict[str, Any]) -> None:
    job["spec"]["trainSpec"]["trigger"]["timer"]["end"] = "25:00"


def _wrong_type(job: dict[str, Any]) -> None:
    job["spec"]["dataset"]["trainProb"] = "most"


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (_no_output_dir, "spec.outputDir: required field is missing"),
        (_no_containers, "spec.deploySpec.template.spec.containers: the pod template needs"),
        (_bad_operator, "spec.trainSpec.trigger.condition.operator: unknown operator"),
        (_bad_timer, 'spec.trainSpec.trigger.timer.end: expected a time of day "HH:MM"'),
        (_wrong_type, "spec.dataset.trainProb: Input should be a valid number"),
    ],
    ids=["no-output-dir", "no-containers", "operator", "timer", "wrong-type"],
)
def test_invalid_job_gets_an_event_naming_the_field(
    mutate: Callable[[dict[str, Any]], None],
    field: str,
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    sedna_reference: Path,
    logs: LogCapture,
) -> None:
    gm = make_gm()
    ds_lc = make_lc(gm, DS_NODE)
    api.create(sample_dataset(sedna_reference))
    bad = sample_job(sedna_reference, name="bad-job")
    mutate(bad)
    api.create(bad)
    api.create(sample_job(sedna_reference))
    msg = api.wait_event("InvalidSpec", field, name="bad-job")
    assert field in msg
    assert logs.contains(f"{api.ns}/bad-job", "InvalidSpec", field)
    # the other job is not held up, the bad one gets nothing
    api.wait_latest("Train/Waiting")
    run_stage(api, ds_lc, "train", TRAIN_INPUT)
    assert api.states("bad-job") == []
    assert api.worker_pods("train", name="bad-job") == []


def test_a_fixed_spec_starts_the_job(api: Api, make_gm: GMFactory, sedna_reference: Path) -> None:
    make_gm()
    api.create(sample_dataset(sedna_reference))
    bad = sample_job(sedna_reference)
    _bad_operator(bad)
    api.create(bad)
    api.wait_event("InvalidSpec", "operator")
    api.jobs.patch(
        api.ns, JOB, {"spec": {"trainSpec": {"trigger": {"condition": {"operator": ">"}}}}}
    )
    api.wait_latest("Train/Waiting")


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"phase": "predict", "status": "ready"}, "content.phase: invalid value 'predict'"),
        ({"phase": "train", "status": "done"}, "content.status: invalid value 'done'"),
        ({"phase": "train", "status": "ready", "input": {"dataURL": 3}}, "content.input.dataURL"),
        (
            {"phase": "train", "status": "completed", "output": {"models": [{"classes": "a"}]}},
            "content.output.models.0.classes",
        ),
        ("not an object", "content: expected an object"),
        (
            {"phase": "train", "status": "ready", "input": {"dataURL": "s3://b/" + "a" * 100_000}},
            "content.input.dataURL: too long (100007 characters, at most 4096)",
        ),
        (
            {"phase": "train", "status": "completed", "output": {"models": [BIG_URL_MODEL]}},
            "content.output.models.0.url: too long",
        ),
        (
            {"phase": "train", "status": "completed", "output": {"models": [MANY_TASKS_MODEL]}},
            "content.output.models.0.current_metric: the report's condition data is",
        ),
    ],
    ids=[
        "phase",
        "status",
        "input",
        "knowledge-base",
        "not-an-object",
        "data-url",
        "model-url",
        "total",
    ],
)
def test_invalid_report_is_an_error_for_that_message_only(
    payload: Any,
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
    before = api.job()["status"]
    lc.report(api.ns, "", "", payload=payload)
    if not isinstance(payload, dict):  # the message layer rejects it before the feature
        wait_until(
            lambda: logs.contains(f"node {DS_NODE}", f"kind={KIND}", f"name={JOB}"),
            what="a log line naming node, kind and job",
        )
    else:
        wait_until(
            lambda: logs.contains(f"node {DS_NODE}", f"LifelongLearningJob {api.ns}/{JOB}"),
            what="a log line naming node, kind and job",
        )
        msg = api.wait_event("InvalidReport", field)
        assert f"node {DS_NODE}" in msg
        assert logs.contains(f"{api.ns}/{JOB}", field)
    # nothing written, not even the knowledge base; the connection goes on
    assert api.job()["status"] == before
    run_stage(api, lc, "train", TRAIN_INPUT)


def test_report_for_unknown_job_is_logged_and_the_connection_goes_on(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sedna_reference: Path, logs: LogCapture
) -> None:
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sedna_reference)
    lc.report(api.ns, "train", "ready", name="no-such-job", input=TRAIN_INPUT)
    wait_until(
        lambda: logs.contains(f"node {DS_NODE}", f"{api.ns}/no-such-job"),
        what="log line for the unknown job",
    )
    run_stage(api, lc, "train", TRAIN_INPUT)


def test_honest_report_with_several_models_and_tasks_lands(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sedna_reference: Path
) -> None:
    """The bound on condition data leaves room for what Sedna's LL workers report: a
    few models, each with the metrics of a few tasks and its classes."""
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sedna_reference)
    run_stage(api, lc, "train", TRAIN_INPUT)
    models = [
        {
            **KB_MODEL,
            "url": f"s3://kubeedge-sedna/lifelong/output/train/1/{'x' * 150}/task-{i}.pkl",
            "classes": [f"class-{c}" for c in range(20)],
            "current_metric": {
                f"task-{i}-{t}": {"precision_score": 0.8, "recall_score": 0.7} for t in range(5)
            },
        }
        for i in range(4)
    ]
    lc.report(api.ns, "train", "completed", output={"models": models})
    kb = wait_until(
        lambda: (
            api.knowledge_base().get("AIModels", {}).get("numberOfAIModels") == 20
            and api.knowledge_base()
        ),
        what="the knowledge base of the report",
    )
    assert kb["AIClasses"]["numberOfAIClasses"] == 20
    done = [c for c in api.conditions() if (c["stage"], c["type"]) == ("Train", "Completed")]
    assert len(done[-1]["data"]) > 3000
