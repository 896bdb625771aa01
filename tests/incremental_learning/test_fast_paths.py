"""The reconcile's cheap paths keep the behaviour: requests, Events, which pods count.

Each test stops the controller's workers and calls `sync` itself, so the requests it
counts (count-only fault rules on the in-process server) are those of one sync. The
informers keep running, and the autouse mutation detector fails the test at GM stop
if a sync changed a cached object.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sedna.embedded.apiserver import APIServer
from sedna.embedded.apiserver.faults import FailureRule
from sedna.runtime import ApiError

from .conftest import GMFactory
from .helpers import GM, JOB, LABEL, Api, create_dependencies, sample_job, wait_until


def _count(srv: APIServer, verb: str, resource: str) -> FailureRule:
    return srv.faults.fail(500, every=10**9, verbs=[verb], resources=[resource])


def _idle_gm(make_gm: GMFactory, api: Api, ref: Path) -> GM:
    """A GM whose workers are stopped, its caches holding the sample job and dependencies."""
    gm = make_gm()
    ctl = gm.controller
    ctl.stop()
    create_dependencies(api, ref)
    api.create(sample_job(ref))
    wait_until(
        lambda: (
            ctl.jobs.lister.get(api.ns, JOB)
            and ctl.models.lister.get(api.ns, "deploy-model")
            and ctl.datasets.lister.get(api.ns, "incremental-dataset")
        ),
        what="caches",
    )
    return gm


def _events(gm: GM, api: Api) -> list[tuple[str, str, str]]:
    assert gm.manager is not None
    gm.manager.container.events().flush(2.0)
    return api.event_list()


def test_first_sync_writes_status_without_reading_the_job_and_posts_one_event(
    api: Api, make_gm: GMFactory, embedded_apiserver: APIServer, sample_dir: Path
) -> None:
    gm = _idle_gm(make_gm, api, sample_dir)
    gets = _count(embedded_apiserver, "get", "incrementallearningjobs")
    puts = _count(embedded_apiserver, "update", "incrementallearningjobs/status")
    assert gm.controller.sync(f"{api.ns}/{JOB}") is None
    assert (gets.seen, puts.seen) == (0, 1)  # the cached job's resourceVersion held
    embedded_apiserver.faults.reset()
    assert api.latest() == "Train/Waiting" and api.job()["status"]["startTime"]
    (pod,) = api.live_pods("inference")
    name = pod["metadata"]["name"]
    # one Event for the first state and the worker created for it
    assert _events(gm, api) == [
        ("Normal", "TrainWaiting", f"(new) -> Train/Waiting, created inference worker pod {name}")
    ]


def test_created_worker_is_announced_alone_when_the_state_write_fails(
    api: Api, make_gm: GMFactory, embedded_apiserver: APIServer, sample_dir: Path
) -> None:
    gm = _idle_gm(make_gm, api, sample_dir)
    key = f"{api.ns}/{JOB}"
    embedded_apiserver.faults.fail(
        500, verbs=["update"], resources=["incrementallearningjobs/status"], count=1
    )
    with pytest.raises(ApiError):  # the controller base retries it with backoff
        gm.controller.sync(key)
    (pod,) = api.live_pods("inference")
    name = pod["metadata"]["name"]
    assert _events(gm, api) == [
        ("Normal", "InferenceWorkerCreated", f"created inference worker pod {name}")
    ]
    assert api.states() == []
    # the retry writes the state; it created nothing, so its Event names nothing
    assert gm.controller.sync(key) is None
    assert api.latest() == "Train/Waiting"
    assert [p["metadata"]["name"] for p in api.live_pods("inference")] == [name]
    assert sorted(_events(gm, api)) == [
        ("Normal", "InferenceWorkerCreated", f"created inference worker pod {name}"),
        ("Normal", "TrainWaiting", "(new) -> Train/Waiting"),
    ]


def test_a_labelled_pod_the_job_does_not_control_is_not_its_worker(
    api: Api, make_gm: GMFactory, sample_dir: Path
) -> None:
    gm = make_gm()
    ctl = gm.controller
    ctl.stop()
    create_dependencies(api, sample_dir)
    job = api.create(sample_job(sample_dir))
    labels = {
        f"{LABEL}name": JOB,
        f"{LABEL}uid": job["metadata"]["uid"],
        f"{LABEL}worker-type": "inference",
    }
    # Sedna's labels but no controller reference: the owner index does not list it
    stray: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "stray-inference", "labels": labels},
        "spec": {"containers": [{"name": "w", "image": "x"}]},
    }
    api.pods.create(api.ns, stray)
    wait_until(
        lambda: (
            ctl.jobs.lister.get(api.ns, JOB)
            and ctl.pods.lister.get(api.ns, "stray-inference")
            and ctl.models.lister.get(api.ns, "deploy-model")
            and ctl.datasets.lister.get(api.ns, "incremental-dataset")
        ),
        what="caches",
    )
    ctl.sync(f"{api.ns}/{JOB}")
    created = [p for p in api.live_pods("inference") if p["metadata"]["name"] != "stray-inference"]
    assert len(created) == 1
    assert created[0]["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
