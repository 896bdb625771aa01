"""Each case of Sedna's LL `transitJobState`, from a job's latest condition to the next."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from sedna.runtime import new_condition

from .conftest import GMFactory, LCFactory
from .helpers import DS_NODE, EVAL_INPUT, TRAIN_INPUT, Api, run_stage, start_sample_job


def _set_latest(api: Api, stage: str, type_: str) -> None:
    job = api.job()
    job["status"]["conditions"].append(new_condition(type_, stage, datetime.now(UTC)))
    api.jobs.replace_status(api.ns, job["metadata"]["name"], job)


@pytest.mark.parametrize(
    ("latest", "after"),
    [
        ("Train/Completed", "Eval/Waiting"),
        ("Eval/Completed", "Deploy/Waiting"),
        ("Deploy/Completed", "Train/Waiting"),
        ("Eval/Failed", "Train/Waiting"),
        ("Deploy/Failed", "Train/Waiting"),
    ],
)
def test_completed_moves_to_the_next_stage_and_failed_back_to_train(
    latest: str, after: str, api: Api, make_gm: GMFactory, sample_dir: Path
) -> None:
    make_gm(options={"failureBackoffSeconds": 0.01, "failureBackoffMaxSeconds": 0.01})
    start_sample_job(api, sample_dir)
    stage, type_ = latest.split("/")
    _set_latest(api, stage, type_)
    api.wait_latest(after)
    assert api.states()[-2:] == [latest, after]


def test_waiting_waits_for_the_lc(api: Api, make_gm: GMFactory, sample_dir: Path) -> None:
    gm = make_gm()
    start_sample_job(api, sample_dir)
    for stage in ("Eval", "Deploy"):
        _set_latest(api, stage, "Waiting")
        api.wait_latest(f"{stage}/Waiting")
        assert gm.controller.wait_idle(5.0)
        assert api.latest() == f"{stage}/Waiting"
    assert api.worker_pods("eval") == [] and api.worker_pods("inference") == []


def test_ready_with_the_stage_worker_already_active_creates_none(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    """Go: a Ready whose stage pod is Pending or Running creates no pod (Starting)."""
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    lc.report(api.ns, "train", "ready", input=TRAIN_INPUT)
    api.wait_latest("Train/Starting")
    gm.stop()
    job = api.job()  # the Ready again, as if Starting had never been written
    job["status"]["conditions"] = job["status"]["conditions"][:-1]
    api.jobs.replace_status(api.ns, job["metadata"]["name"], job)
    gm.start()
    api.wait_latest("Train/Starting")
    assert len(api.worker_pods("train")) == 1


@pytest.mark.parametrize(
    ("phase", "states"),
    [
        ("Succeeded", ["Eval/Running", "Eval/Completed", "Deploy/Waiting"]),
        ("Failed", ["Eval/Running", "Eval/Failed"]),  # then back to Train after the backoff
    ],
)
def test_the_stage_pod_decides_running_stages(
    phase: str,
    states: list[str],
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    sample_dir: Path,
) -> None:
    gm = make_gm(options={"failureBackoffSeconds": 60, "failureBackoffMaxSeconds": 60})
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    _set_latest(api, "Train", "Completed")
    api.wait_latest("Eval/Waiting")
    ev = run_stage(api, lc, "eval", EVAL_INPUT)
    assert api.job()["metadata"]["annotations"]["sedna.io/Eval"] == "edge-node"
    api.set_phase_and_wait(ev["metadata"]["name"], phase, states[-1])
    assert gm.controller.wait_idle(5.0)
    assert api.states()[-len(states) :] == states
