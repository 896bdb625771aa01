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
    job["spec"]["trainSpec"]["trigger"]["condition"]["operator"] = "~"


def _bad_timer(job: dict[str, Any]) -> None:
    job["spec"]["trainSpec"]["trigger"]["timer"]["end"] = "25:00"


def _bad_timer_start(job: dict[str, Any]) -> None:
    job["spec"]["trainSpec"]["trigger"]["timer"]["start"] = "25:99"


def _bad_check_period(job: dict[str, Any]) -> None:
    job["spec"]["trainSpec"]["trigger"]["checkPeriodSeconds"] = -5


def _wrong_type(job: dict[str, Any]) -> None:
    job["spec"]["dataset"]["trainProb"] = "most"


def _train_container(job: dict[str, Any]) -> None:
    job["spec"]["trainSpec"]["template"]["spec"]["containers"][0]["name"] = "Bad_Name"


def _eval_container(job: dict[str, Any]) -> None:
    job["spec"]["evalSpec"]["template"]["spec"]["containers"][0]["name"] = "Eval"


def _deploy_container(job: dict[str, Any]) -> None:
    job["spec"]["deploySpec"]["template"]["spec"]["containers"][0]["name"] = "infer_worker"


def _env_not_a_string(job: dict[str, Any]) -> None:
    job["spec"]["trainSpec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = 100


RFC1123 = "is not a lowercase RFC 1123 label"


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (_no_output_dir, "spec.outputDir: required field is missing"),
        (_no_containers, "spec.deploySpec.template.spec.containers: the pod template needs"),
        (
            _bad_operator,
            'spec.trainSpec.trigger.condition.operator: unsupported operator "~" (supported: >, <',
        ),
        (_bad_timer, 'spec.trainSpec.trigger.timer.end: expected a time of day "HH:MM"'),
        (_bad_timer_start, 'spec.trainSpec.trigger.timer.start: expected a time of day "HH:MM"'),
        (_bad_check_period, "spec.trainSpec.trigger.checkPeriodSeconds: must be a positive"),
        (_wrong_type, "spec.dataset.trainProb: Input should be a valid number"),
        (
            _train_container,
            f"spec.trainSpec.template.spec.containers[0].name: 'Bad_Name' {RFC1123}",
        ),
        (_eval_container, f"spec.evalSpec.template.spec.containers[0].name: 'Eval' {RFC1123}"),
        (
            _deploy_container,
            f"spec.deploySpec.template.spec.containers[0].name: 'infer_worker' {RFC1123}",
        ),
        (_env_not_a_string, "spec.trainSpec.template.spec.containers[0].env[0].value: must be a"),
    ],
    ids=[
        "no-output-dir",
        "no-containers",
        "operator",
        "timer-end",
        "timer-start",
        "check-period",
        "wrong-type",
        "train-container-name",
        "eval-container-name",
        "deploy-container-name",
        "env-value",
    ],
)
def test_invalid_job_gets_an_event_and_a_condition_naming_the_field(
    mutate: Callable[[dict[str, Any]], None],
    field: str,
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    sample_dir: Path,
    logs: LogCapture,
) -> None:
    gm = make_gm()
    ds_lc = make_lc(gm, DS_NODE)
    api.create(sample_dataset(sample_dir))
    bad = sample_job(sample_dir, name="bad-job")
    mutate(bad)
    api.create(bad)
    api.create(sample_job(sample_dir))
    msg = api.wait_event("InvalidSpec", field, name="bad-job")
    assert field in msg
    assert logs.contains(f"{api.ns}/bad-job", "InvalidSpec", field)
    waiting = wait_until(
        lambda: (c := api.conditions("bad-job")) and c[-1].get("reason") == "InvalidSpec" and c[-1],
        what="the waiting condition naming the field",
    )
    assert (waiting["stage"], waiting["type"]) == ("Train", "Waiting")
    assert field in waiting["message"]
    # the other job is not held up; the bad one gets no worker
    api.wait_latest("Train/Waiting")
    run_stage(api, ds_lc, "train", TRAIN_INPUT)
    assert gm.controller.wait_idle(5.0)
    assert api.worker_pods("train", name="bad-job") == []
    assert api.latest("bad-job") == "Train/Waiting"


def test_a_fixed_spec_starts_the_job(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    gm = make_gm()
    ds_lc = make_lc(gm, DS_NODE)
    api.create(sample_dataset(sample_dir))
    bad = sample_job(sample_dir)
    _bad_operator(bad)
    _train_container(bad)
    api.create(bad)
    api.wait_event("InvalidSpec", "spec.trainSpec.template.spec.containers[0].name")
    wait_until(
        lambda: (c := api.conditions()) and c[-1].get("reason") == "InvalidSpec",
        what="the waiting condition naming the field",
    )
    job = api.job()
    job["spec"]["trainSpec"]["template"]["spec"]["containers"][0]["name"] = "train-worker"
    api.jobs.replace(api.ns, JOB, job)
    # the next problem is named in turn
    wait_until(
        lambda: "condition.operator" in api.conditions()[-1].get("message", ""),
        what="the condition naming the operator",
    )
    api.jobs.patch(
        api.ns, JOB, {"spec": {"trainSpec": {"trigger": {"condition": {"operator": ">"}}}}}
    )
    wait_until(lambda: "reason" not in api.conditions()[-1], what="the note cleared")
    assert api.states() == ["Train/Waiting"]
    run_stage(api, ds_lc, "train", TRAIN_INPUT)


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
    sample_dir: Path,
    logs: LogCapture,
) -> None:
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
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
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path, logs: LogCapture
) -> None:
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    lc.report(api.ns, "train", "ready", name="no-such-job", input=TRAIN_INPUT)
    wait_until(
        lambda: logs.contains(f"node {DS_NODE}", f"{api.ns}/no-such-job"),
        what="log line for the unknown job",
    )
    run_stage(api, lc, "train", TRAIN_INPUT)


def test_honest_report_with_several_models_and_tasks_lands(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    """The bound on condition data leaves room for what Sedna's LL workers report: a
    few models, each with the metrics of a few tasks and its classes."""
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
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
