"""Bare worker pods after a GM restart: no second pod for a create the old GM made.

The GM before a restart may have created an owner's pod with a create that committed
after the new GM's informers listed (a slow write answered 504 commits later), so the
new GM's cache shows no pod and it has no memory of the create. For an owner older
than the process, `OwnedPods` asks the API (`PodCreations(verify=True)`) before it
creates.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sedna.runtime import (
    MODELS,
    PODS,
    ControllerContext,
    FakeClock,
    KubeClient,
    PodWant,
    WorkerParam,
    WorkerRuntime,
    WriteEchoes,
)
from sedna.runtime.config import GMConfig
from sedna.runtime.events import EventRecorder
from sedna.runtime.informers import SharedInformerFactory
from sedna.runtime.metrics import Metrics
from sedna.runtime.owned_pods import OwnedPods
from sedna.runtime.upstream import UpstreamRegistry

TEMPLATE = {"spec": {"containers": [{"name": "reid", "image": "reid:v1"}]}}


def _process(kube: KubeClient, clock: FakeClock, echoes: WriteEchoes | None = None) -> OwnedPods:
    """One GM process's OwnedPods (a context of its own: no memory shared)."""
    metrics = Metrics()
    ctx = ControllerContext(
        config=GMConfig(),
        kube=kube,
        informers=SharedInformerFactory(kube, clock=clock),
        send=lambda node, op, obj: None,
        upstream=UpstreamRegistry(),
        events=EventRecorder(kube, metrics=metrics, clock=clock),
        metrics=metrics,
        worker_runtime=WorkerRuntime(kube),
        clock=clock,
    )
    return OwnedPods(ctx, echoes=echoes)


def _want() -> PodWant:
    return PodWant("reid", "reid", TEMPLATE, WorkerParam(worker_type="reid"))


def _pods(kube: KubeClient, namespace: str) -> list[dict[str, Any]]:
    return list(kube.resource(PODS).list(namespace)["items"])


def test_a_new_process_adopts_the_pod_its_predecessor_made_for_an_older_owner(
    kube: KubeClient, namespace: str
) -> None:
    owner = kube.resource(MODELS).create(
        namespace, {"metadata": {"name": "owner"}, "spec": {"url": "/m", "format": "pb"}}
    )
    clock = FakeClock(wall_start=datetime.now(UTC) + timedelta(hours=1))  # after the owner
    before = _process(kube, clock)
    before.ensure(owner, [_want()], [])
    (made,) = _pods(kube, namespace)
    # the new process: its cache does not show the pod yet (the late commit)
    after = _process(kube, clock)
    seen = after.ensure(owner, [_want()], [])
    pods = _pods(kube, namespace)
    assert len(pods) == 1, [p["metadata"]["name"] for p in pods]
    assert seen.created == [f"Pod {made['metadata']['name']}"]  # adopted, not made


def test_an_owner_newer_than_the_process_is_created_without_a_look_up(
    kube: KubeClient, namespace: str
) -> None:
    owner = kube.resource(MODELS).create(
        namespace, {"metadata": {"name": "owner"}, "spec": {"url": "/m", "format": "pb"}}
    )
    clock = FakeClock(wall_start=datetime.now(UTC) - timedelta(hours=1))  # before the owner
    process = _process(kube, clock)
    seen = process.ensure(owner, [_want()], [])
    assert len(seen.created) == 1
    assert len(_pods(kube, namespace)) == 1


def test_the_pod_made_is_recorded_as_an_echo_an_adopted_one_is_not(
    kube: KubeClient, namespace: str
) -> None:
    """The watch event of a pod the sync made wakes no second sync; one found at the API
    (adopted) was not written by this sync, and its events wake the owner."""
    owner = kube.resource(MODELS).create(
        namespace, {"metadata": {"name": "owner"}, "spec": {"url": "/m", "format": "pb"}}
    )
    clock = FakeClock(wall_start=datetime.now(UTC) + timedelta(hours=1))
    echoes = WriteEchoes()
    _process(kube, clock, echoes).ensure(owner, [_want()], [])
    (made,) = _pods(kube, namespace)
    assert echoes.is_echo(made)
    adopting = WriteEchoes()
    _process(kube, clock, adopting).ensure(owner, [_want()], [])  # its cache lacks the pod
    assert len(_pods(kube, namespace)) == 1 and len(adopting) == 0
