"""The GM stopped and restarted in the middle of each stage: no second pod, the job goes on.

The API is the database: a new GM (new caches, new websocket port) resumes from it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from sedna_incremental_learning.controller import READY_CONDITION_ANNOTATION
from sedna_incremental_learning.upstream import condition_from_report
from support.waiting import wait_until

from sedna.embedded.apiserver import APIServer

from .conftest import GMFactory, LCFactory
from .helpers import (
    DS_NODE,
    TRAIN_INPUT,
    WORKER_NODE,
    Api,
    start_sample_job,
    start_stage,
)

EVAL_INPUT = {"models": [{"format": "ckpt", "url": "/output/train/1/m.pb"}], "dataURL": "/d.txt"}


def test_restart_in_every_stage(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    gm = make_gm()
    ds_lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)

    # restart before anything ran: no second inference worker
    gm.restart()
    ds_lc = make_lc(gm, DS_NODE)
    ds_lc.wait_job_state("Train/Waiting")  # the new GM told the (reconnected) LC again
    assert len(api.live_pods("inference")) == 1

    # Train: GM down while the worker starts
    start_stage(api, ds_lc, "train", TRAIN_INPUT)
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

    # Eval: GM down while Running; the worker succeeds meanwhile
    ds_lc = make_lc(gm, DS_NODE)
    start_stage(api, ds_lc, "eval", EVAL_INPUT)
    (ev,) = api.live_pods("eval")
    api.set_phase_and_wait(ev["metadata"]["name"], "Running", "Eval/Running")
    gm.stop()
    api.set_phase(ev["metadata"]["name"], "Succeeded")
    gm.start()
    api.wait_latest("Deploy/Waiting")
    assert len(api.worker_pods("eval")) == 1

    # Deploy: restart while Waiting; the eval node's LC hears of the job again
    gm.restart()
    node_lc = make_lc(gm, WORKER_NODE)
    node_lc.wait_job_state("Deploy/Waiting")
    node_lc.report(api.ns, "deploy", "ready", input={"models": [{"url": "/m.pb"}]})
    api.wait_latest("Train/Waiting")
    assert len(api.live_pods("inference")) == 1
    assert len(api.worker_pods("train")) == 1
    assert len(api.worker_pods("eval")) == 1


def test_restart_between_pod_creation_and_status_write(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    """The GM created the worker and died before writing Starting: adopt, never duplicate."""
    gm = make_gm()
    ds_lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    start_stage(api, ds_lc, "train", TRAIN_INPUT)
    gm.stop()

    # roll the status back to what a crash before the status write leaves behind
    job = api.job()
    job["status"]["conditions"] = job["status"]["conditions"][:-1]
    api.jobs.replace_status(api.ns, job["metadata"]["name"], job)
    assert api.latest() == "Train/Ready"

    gm.start()
    api.wait_latest("Train/Starting")
    assert api.conditions()[-1]["reason"] == "WorkerAdopted"
    assert len(api.worker_pods("train")) == 1


def test_restart_before_the_first_status_write(
    api: Api, make_gm: GMFactory, sample_dir: Path
) -> None:
    """The inference worker exists but startTime was never written: not created twice."""
    gm = make_gm()
    start_sample_job(api, sample_dir, hot_update=True)
    gm.stop()
    job = api.job()
    job["status"] = {}
    api.jobs.replace_status(api.ns, job["metadata"]["name"], job)
    gm.start()
    api.wait_latest("Train/Waiting")
    assert api.job()["status"]["startTime"]
    assert len(api.worker_pods("inference")) == 1


def test_restart_after_the_unrecorded_worker_finished(
    api: Api,
    make_gm: GMFactory,
    sample_dir: Path,
    embedded_apiserver: APIServer,
) -> None:
    """The GM created the worker but never recorded it (its Starting write failed, then
    it stopped), and the worker finished before the GM came back. Sedna's "unless
    Pending/Running" rule would run the stage a second time; the pod carries the Ready
    condition it was made for, so it is adopted and its result used."""
    gm = make_gm()
    start_sample_job(api, sample_dir)
    gm.stop()

    job = api.job()  # the LC's train/ready, as the GM would have appended it
    report = {"phase": "train", "status": "ready", "input": TRAIN_INPUT}
    ready = condition_from_report(report, datetime.now(UTC))
    job["status"]["conditions"].append(ready)
    api.jobs.replace_status(api.ns, job["metadata"]["name"], job)
    embedded_apiserver.faults.fail(
        500, verbs=["update", "patch"], resources=["incrementallearningjobs/status"]
    )
    gm.start()
    (train,) = wait_until(lambda: api.live_pods("train"), what="the train worker")
    gm.stop()
    embedded_apiserver.faults.reset()
    assert api.latest() == "Train/Ready"
    api.set_phase(train["metadata"]["name"], "Running")
    api.set_phase(train["metadata"]["name"], "Succeeded")

    gm.start()
    api.wait_latest("Eval/Waiting")
    assert api.states()[-4:] == ["Train/Ready", "Train/Starting", "Train/Completed", "Eval/Waiting"]
    assert api.conditions()[-3]["reason"] == "WorkerAdopted"
    (adopted,) = api.worker_pods("train")
    assert adopted["metadata"]["name"] == train["metadata"]["name"]
    # recorded now: the tag that bridged the crash is gone
    assert READY_CONDITION_ANNOTATION in train["metadata"]["annotations"]
    assert READY_CONDITION_ANNOTATION not in (adopted["metadata"].get("annotations") or {})
