"""The causes found behind the fault suite's rare failures, one regression test each.

Each drives the embedded server's faults and the GM's virtual clock so that the
interleaving that went wrong under load happens every time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from incremental_learning.helpers import (
    DS_NODE,
    TRAIN_INPUT,
    start_sample_job,
    whole_second_clock,
)
from support.waiting import wait_until

from sedna.embedded.apiserver import APIServer
from sedna.runtime import generate_labels, job_ref
from sedna.runtime.stages.machine import READY_CONDITION_ANNOTATION, ready_tag
from sedna.testing.logs import LogCapture

from .conftest import Api, GMFactory, LCFactory

STATUS = ("incrementallearningjobs/status",)


def _train_pod(job: dict[str, Any], tag: str) -> dict[str, Any]:
    """A train worker as the GM makes it for the Ready whose tag is `tag`."""
    meta = job["metadata"]
    return {
        "metadata": {
            "generateName": f"{meta['name']}-train-",
            "labels": generate_labels(job_ref(job), "train"),
            "annotations": {READY_CONDITION_ANNOTATION: tag},
            "ownerReferences": [
                {
                    "apiVersion": job["apiVersion"],
                    "kind": job["kind"],
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "nodeName": DS_NODE,
            "restartPolicy": "OnFailure",
            "containers": [{"name": "train", "image": "train"}],
        },
    }


def _count(api: Api, state: str) -> int:
    return api.states().count(state)


def test_a_landed_report_noted_on_by_the_machine_is_not_appended_again(
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    logs: LogCapture,
    sample_dir: Path,
    embedded_apiserver: APIServer,
) -> None:
    """The report's write lands but its answer is lost; before the report is retried the
    machine notes a failed create on the new Ready condition. The retry compared the job
    with what it had sent, took the noted condition for unwritten and appended a second
    Train/Ready (under lost pod creates, a second Ready made a second train worker)."""
    clock = whole_second_clock()
    gm = make_gm(clock=clock)
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    faults = embedded_apiserver.faults
    faults.lose_responses(verbs=("update",), resources=STATUS, count=1)  # the report's
    faults.fail(500, verbs=("create",), resources=("pods",), count=1)  # the train worker's
    lc.report(api.ns, "train", "ready", input=TRAIN_INPUT)

    def noted() -> bool:
        return any(
            c["type"] == "Ready" and c.get("reason") == "WorkerCreateFailed"
            for c in api.conditions()
        )

    # the report waits for its backoff on the virtual clock, the machine has noted
    wait_until(noted, 10.0, "the failed create noted on Train/Ready")

    def retried() -> bool:
        clock.step(1.0)
        return logs.contains("answer was lost had landed") or _count(api, "Train/Ready") > 1

    wait_until(retried, 10.0, "the report's retry")
    assert _count(api, "Train/Ready") == 1, api.states()
    wait_until(lambda: api.latest() == "Train/Starting", 10.0, "Train/Starting")
    assert len(api.live_pods("train")) == 1
    assert _count(api, "Train/Ready") == 1, api.states()


def test_a_ready_written_twice_is_answered_with_the_pod_it_already_has(
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    sample_dir: Path,
) -> None:
    """A report applied twice leaves two copies of one Ready, the second after the
    Starting that records the first's worker. A GM with no expectation for it (it had
    adopted the worker from its cache, or restarted) made a second train worker."""
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    lc.report(api.ns, "train", "ready", input=TRAIN_INPUT)
    api.wait_latest("Train/Starting")
    (first,) = api.live_pods("train")
    gm.stop()

    job = api.job()
    conds = job["status"]["conditions"]
    (ready,) = [c for c in conds if c["stage"] == "Train" and c["type"] == "Ready"]
    conds.append(dict(ready))
    api.jobs.replace_status(api.ns, job["metadata"]["name"], job)

    gm.start()
    wait_until(lambda: api.states()[-2:] == ["Train/Ready", "Train/Starting"], 10.0, "Starting")
    latest = api.conditions()[-1]
    assert latest["reason"] == "WorkerAdopted", latest
    assert [p["metadata"]["name"] for p in api.live_pods("train")] == [first["metadata"]["name"]]


def test_a_worker_the_gm_before_a_restart_made_is_looked_up_in_the_api(
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    sample_dir: Path,
    embedded_apiserver: APIServer,
) -> None:
    """The GM dies while its create of a train worker is in flight; the write commits
    only after the next GM's informers have listed (kube-apiserver answers a slow etcd
    write with 504 and still commits it). The new GM had no memory of the create and
    trusted its cache: a second train worker. Now a Ready older than the process is
    first looked up in the API."""
    clock = whole_second_clock()
    gm = make_gm(clock=clock)
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    faults = embedded_apiserver.faults
    no_creates = faults.fail(429, verbs=("create",), resources=("pods",))
    lc.report(api.ns, "train", "ready", input=TRAIN_INPUT)
    wait_until(
        lambda: api.conditions()[-1].get("reason") == "WorkerCreateFailed", 10.0, "a failed create"
    )
    lc.close()
    gm.stop()
    tried = no_creates.seen

    # the next GM's caches keep what they first listed: its watches are held back
    faults.add_latency(5.0, verbs=("watch",))
    gm.start()
    wait_until(lambda: no_creates.seen > tried, 10.0, "the new GM's first create")

    # the old GM's create commits now
    no_creates.remaining = 0
    job = api.job()
    (ready,) = [c for c in api.conditions() if c["type"] == "Ready"]
    late = _train_pod(job, ready_tag(ready))
    made = api.pods.create(api.ns, late)["metadata"]["name"]

    def started() -> bool:
        clock.step(5.0)  # the controller's backoff after the failed create
        return api.latest() == "Train/Starting"

    wait_until(started, 10.0, "Train/Starting")
    assert [p["metadata"]["name"] for p in api.live_pods("train")] == [made]
    assert api.conditions()[-1]["reason"] == "WorkerAdopted"
