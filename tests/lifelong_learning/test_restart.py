"""The GM stopped and restarted in every stage of an LL cycle: no second pod, the job
goes on. The API is the database: a new GM (new caches, new websocket port) resumes."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from sedna_lifelong_learning.upstream import parse_report
from support.waiting import wait_until

from sedna.embedded.apiserver import APIServer
from sedna.runtime import new_condition

from .conftest import GMFactory, LCFactory
from .helpers import (
    DEPLOY_INPUT,
    DS_NODE,
    EVAL_INPUT,
    TRAIN_INPUT,
    WORKER_NODE,
    Api,
    start_sample_job,
)


def test_restart_in_every_stage(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    gm = make_gm()
    ds_lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)

    # Waiting: the new GM tells the (reconnected) LC again; still no inference worker
    gm.restart()
    ds_lc = make_lc(gm, DS_NODE)
    ds_lc.wait_job_state("Train/Waiting")
    assert api.worker_pods("inference") == []

    # Train: GM down while the worker starts
    ds_lc.report(api.ns, "train", "ready", input=TRAIN_INPUT)
    api.wait_latest("Train/Starting")
    gm.stop()
    (train,) = api.live_pods("train")
    api.set_phase(train["metadata"]["name"], "Running")
    gm.start()
    api.wait_latest("Train/Running")
    assert api.job()["metadata"]["annotations"]["sedna.io/Train"] == WORKER_NODE
    assert len(api.worker_pods("train")) == 1

    # Train -> Eval across a restart: the worker finished while the GM was down
    gm.stop()
    api.set_phase(train["metadata"]["name"], "Succeeded")
    gm.start()
    api.wait_latest("Eval/Waiting")
    assert api.states()[-3:] == ["Train/Running", "Train/Completed", "Eval/Waiting"]

    # Eval: GM down between Ready and the worker's start
    ds_lc = make_lc(gm, DS_NODE)
    ds_lc.report(api.ns, "eval", "ready", input=EVAL_INPUT)
    api.wait_latest("Eval/Starting")
    gm.restart()
    (ev,) = api.live_pods("eval")
    api.set_phase_and_wait(ev["metadata"]["name"], "Running", "Eval/Running")
    gm.stop()
    api.set_phase(ev["metadata"]["name"], "Succeeded")
    gm.start()
    api.wait_latest("Deploy/Waiting")
    assert len(api.worker_pods("eval")) == 1

    # Deploy: restart while Waiting; the dataset node's LC hears of the job again
    gm.restart()
    ds_lc = make_lc(gm, DS_NODE)
    ds_lc.wait_job_state("Deploy/Waiting")
    ds_lc.report(api.ns, "deploy", "ready", input=DEPLOY_INPUT)
    api.wait_latest("Train/Waiting")
    gm.restart()
    assert gm.controller.wait_idle(5.0)
    assert len(api.live_pods("inference")) == 1
    assert len(api.worker_pods("train")) == 1
    assert len(api.worker_pods("eval")) == 1


def _append_ready(api: Api, report: dict[str, object]) -> None:
    """The LC's report, appended as the GM would have (the GM is down meanwhile)."""
    parsed = parse_report(report)
    job = api.job()
    cond = new_condition(
        parsed.type, parsed.stage, datetime.now(UTC), message="reported by lc", data=parsed.data
    )
    job["status"]["conditions"].append(cond)
    api.jobs.replace_status(api.ns, job["metadata"]["name"], job)


def test_restart_between_pod_creation_and_status_write(
    api: Api, make_gm: GMFactory, sample_dir: Path
) -> None:
    """The GM created the worker and died before writing Starting: adopt, never duplicate."""
    gm = make_gm()
    start_sample_job(api, sample_dir)
    gm.stop()
    _append_ready(api, {"phase": "train", "status": "ready", "input": TRAIN_INPUT})
    gm.start()
    api.wait_latest("Train/Starting")
    gm.stop()
    job = api.job()  # roll back what a crash before the status write leaves behind
    job["status"]["conditions"] = job["status"]["conditions"][:-1]
    api.jobs.replace_status(api.ns, job["metadata"]["name"], job)
    assert api.latest() == "Train/Ready"
    gm.start()
    api.wait_latest("Train/Starting")
    assert api.conditions()[-1]["reason"] == "WorkerAdopted"
    assert len(api.worker_pods("train")) == 1


def test_deploy_restart_with_its_status_write_failing_makes_one_inference_worker(
    api: Api, make_gm: GMFactory, sample_dir: Path, embedded_apiserver: APIServer
) -> None:
    """Deploy/Ready replaces the inference worker; when the Completed write fails and the
    GM restarts, the next GM must not leave two inference workers behind."""
    gm = make_gm()
    start_sample_job(api, sample_dir)
    gm.stop()
    _append_ready(api, {"phase": "deploy", "status": "ready", "input": DEPLOY_INPUT})
    embedded_apiserver.faults.fail(
        500, verbs=["update", "patch"], resources=["lifelonglearningjobs/status"]
    )
    gm.start()
    wait_until(lambda: api.live_pods("inference"), what="the inference worker")
    gm.stop()
    embedded_apiserver.faults.reset()
    assert api.latest() == "Deploy/Ready"
    gm.start()
    api.wait_latest("Train/Waiting")
    assert gm.controller.wait_idle(5.0)
    assert len(api.live_pods("inference")) == 1
