"""The API is the database: a GM stopped or killed in any phase resumes every job from the
API with no pod made twice; duplicates and pods of another GM are sorted out."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from sedna.embedded.apiserver import APIServer

from .conftest import GMFactory
from .helpers import JOB, WORKER, Api, started_job, wait_until


def _names(pods: list[dict[str, Any]]) -> set[str]:
    return {p["metadata"]["name"] for p in pods}


def _creates(api: Api) -> int:
    return sum(1 for _, reason, _ in api.event_list() if reason == "SuccessfulCreate")


@pytest.mark.parametrize("phase", ["Pending", "Running"])
def test_a_restart_while_the_job_runs_adopts_every_worker(
    api: Api, make_gm: GMFactory, sample_dir: Path, phase: str
) -> None:
    gm, _ = started_job(api, make_gm, sample_dir)
    if phase == "Running":
        api.set_all("Running")
    api.wait_phase(phase)
    before = _names(api.live_pods())
    api.wait_event("SuccessfulCreate", "training-1")
    creates = _creates(api)
    gm.stop()
    # a status the restarted GM must correct: proof that it synced the job
    job = api.job()
    job["status"]["active"] = 99
    api.fl.replace_status(api.ns, JOB, job)
    gm.start()
    wait_until(lambda: api.status().get("active") == 3, what="active recounted")
    assert gm.controller.wait_idle(5.0)
    assert _names(api.live_pods()) == before
    assert api.phase() == phase
    assert _creates(api) == creates


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_restart_after_the_end_changes_nothing(
    api: Api, make_gm: GMFactory, sample_dir: Path, phase: str
) -> None:
    gm, _ = started_job(api, make_gm, sample_dir)
    api.set_all("Succeeded" if phase == "Succeeded" else "Failed")
    api.wait_phase(phase)
    status = api.status()
    gm.stop()
    # a worker gone while the GM was down stays gone: the job is finished
    api.pods.delete(api.ns, api.live_pods()[0]["metadata"]["name"])
    gm.start()
    api.fl.patch(api.ns, JOB, {"metadata": {"labels": {"after": "restart"}}})
    wait_until(lambda: gm.controller.wait_idle(1.0))
    assert len(api.live_pods()) == 2
    assert api.status() == status


def test_a_gm_killed_halfway_through_creating_the_workers_completes_the_set(
    api: Api, make_gm: GMFactory, sample_dir: Path
) -> None:
    """What a GM killed after its first create leaves (the aggregator, no training pod,
    no status): the next GM makes only the missing workers."""
    gm, _ = started_job(api, make_gm, sample_dir)
    gm.stop()
    workers = api.workers()
    for slot in ("training-0", "training-1"):
        api.pods.delete(api.ns, workers[slot]["metadata"]["name"])
    job = api.job()
    job["status"] = {}
    api.fl.replace_status(api.ns, JOB, job)
    gm.start()
    api.wait_workers(3)
    assert workers["aggregation"]["metadata"]["name"] in _names(api.live_pods())
    api.wait_phase("Pending")
    assert gm.controller.wait_idle(5.0)
    assert len(api.live_pods()) == 3


def test_a_create_that_fails_is_retried_without_duplicates(
    api: Api, make_gm: GMFactory, sample_dir: Path, embedded_apiserver: APIServer
) -> None:
    from .helpers import sample_job

    job = sample_job(sample_dir)
    api.inputs(job)
    embedded_apiserver.faults.fail(500, every=2, verbs=["create"], resources=["pods"])
    gm = make_gm()
    api.create(job)
    api.wait_event("WorkerCreateFailed", "injected fault")
    api.wait_workers(3)
    embedded_apiserver.faults.reset()
    assert gm.controller.wait_idle(5.0)
    assert sorted(api.workers()) == ["aggregation", "training-0", "training-1"]


def test_a_second_pod_for_one_worker_is_deleted(
    api: Api, make_gm: GMFactory, sample_dir: Path
) -> None:
    gm, _ = started_job(api, make_gm, sample_dir)
    api.set_phase(api.workers()["training-0"]["metadata"]["name"], "Running")
    gm.stop()
    original = api.workers()["training-0"]
    twin = copy.deepcopy(original)
    meta = twin["metadata"]
    for k in ("name", "uid", "resourceVersion", "creationTimestamp"):
        meta.pop(k, None)
    twin.pop("status", None)
    created = api.pods.create(api.ns, twin)
    gm.start()
    api.wait_event("SuccessfulDelete", created["metadata"]["name"])
    wait_until(lambda: created["metadata"]["name"] not in _names(api.live_pods()))
    assert original["metadata"]["name"] in _names(api.live_pods())
    assert len(api.live_pods()) == 3


def test_pods_of_another_gm_are_adopted_then_rolled_out_like_ours(
    api: Api, make_gm: GMFactory, sample_dir: Path
) -> None:
    """Sedna's Go GM marks nothing on its pods: they are taken as the current workers."""
    gm, _ = started_job(api, make_gm, sample_dir)
    gm.stop()
    before = _names(api.live_pods())
    for name in before:
        api.pods.patch(
            api.ns,
            name,
            {"metadata": {"annotations": {WORKER: None, "sedna-gm.io/fl-generation": None}}},
        )
    gm.start()
    wait_until(
        lambda: all(WORKER in (p["metadata"].get("annotations") or {}) for p in api.live_pods()),
        what="pods annotated",
    )
    assert _names(api.live_pods()) == before
    assert sorted(api.workers()) == ["aggregation", "training-0", "training-1"]
    # and a spec change replaces them
    api.fl.patch(
        api.ns, JOB, {"metadata": {"labels": {"x": "y"}}, "spec": {"pretrainedModel": None}}
    )
    spec = api.job()["spec"]
    spec["trainingWorkers"][0]["template"]["spec"]["containers"][0]["env"][0]["value"] = "8"
    api.fl.patch(api.ns, JOB, {"spec": {"trainingWorkers": spec["trainingWorkers"]}})
    wait_until(lambda: len(api.live_pods()) == 3 and not _names(api.live_pods()) & before)


def test_creates_that_commit_but_answer_504_make_no_second_pod(
    api: Api, make_gm: GMFactory, sample_dir: Path, embedded_apiserver: APIServer
) -> None:
    """kube-apiserver answers 504 after a slow etcd write that went through: the retry
    lists the job's pods from the server before creating anything (the pod cache is
    frozen, so only the server can tell the retry what exists)."""
    from sedna.runtime import PODS

    from .helpers import sample_job

    job = sample_job(sample_dir)
    api.inputs(job)
    embedded_apiserver.faults.fail(
        504, verbs=["create"], resources=["pods"], count=3, after_commit=True
    )
    gm = make_gm()
    assert gm.manager is not None
    gm.manager.container.informers().informer(PODS).stop(5.0)
    api.create(job)
    api.wait_event("WorkerCreateFailed", "504")
    api.wait_workers(3)
    assert gm.controller.wait_idle(5.0)
    embedded_apiserver.faults.reset()
    assert sorted(api.workers()) == ["aggregation", "training-0", "training-1"]
    assert len(api.all_pods()) == 3


def test_syncs_with_a_pod_cache_that_lags_make_no_second_pod(
    api: Api, make_gm: GMFactory, sample_dir: Path
) -> None:
    """The pod cache never sees the workers (its informer stopped first): every later
    sync (woken by the job's own status writes and edits) finds them on the server."""
    from sedna.runtime import PODS

    from .helpers import sample_job

    job = sample_job(sample_dir)
    api.inputs(job)
    gm = make_gm()
    assert gm.manager is not None
    gm.manager.container.informers().informer(PODS).stop(5.0)
    api.create(job)
    api.wait_phase("Pending")
    for i in range(3):
        api.fl.patch(api.ns, JOB, {"metadata": {"labels": {"poke": str(i)}}})
        wait_until(lambda i=i: api.job()["metadata"]["labels"] == {"poke": str(i)})
        assert gm.controller.wait_idle(5.0)
    assert len(api.all_pods()) == 3
    assert sorted(api.workers()) == ["aggregation", "training-0", "training-1"]


def test_a_new_job_s_workers_are_made_without_a_list_a_lost_one_after_a_list(
    api: Api, make_gm: GMFactory, sample_dir: Path, embedded_apiserver: APIServer
) -> None:
    """A job without a status has no worker this GM made, and any a GM before it made is
    in the cache synced at start: its workers are made without listing the server. Once
    it has a status, a worker missing from the cache is looked for on the server first.
    (The rules count pod lists and fail none; the test lists no pods while one counts.)"""
    from .helpers import sample_job

    job = sample_job(sample_dir)
    api.inputs(job)
    gm = make_gm()
    lists = embedded_apiserver.faults.fail(every=10**9, verbs=["list"], resources=["pods"])
    api.create(job)
    api.wait_phase("Pending")  # written by the sync that made all three workers
    assert gm.controller.wait_idle(5.0)
    assert lists.seen == 0
    embedded_apiserver.faults.reset()

    lost = api.workers()["training-1"]["metadata"]["name"]
    lists = embedded_apiserver.faults.fail(every=10**9, verbs=["list"], resources=["pods"])
    api.pods.delete(api.ns, lost)
    wait_until(lambda: sum("training-1 worker" in m for m in _create_messages(api)) == 2)
    assert gm.controller.wait_idle(5.0)
    assert lists.seen >= 1
    embedded_apiserver.faults.reset()
    assert sorted(api.workers()) == ["aggregation", "training-0", "training-1"]
    assert lost not in _names(api.all_pods()) and len(api.all_pods()) == 3


def _create_messages(api: Api) -> list[str]:
    return [m for _, reason, m in api.event_list() if reason == "SuccessfulCreate"]
