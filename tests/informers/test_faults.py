"""Informers against a misbehaving server: dropped streams, 410 Gone, errors, silence."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from sedna.embedded.apiserver import APIServer
from sedna.runtime.clock import FakeClock
from sedna.runtime.informers import (
    BackoffPolicy,
    DeletedFinalStateUnknown,
    InformerOptions,
    SharedInformerFactory,
)
from sedna.runtime.kube import CONFIGMAPS, PODS, KubeClient

from .helpers import Recorder, cache_state, pod, server_state, wait_until

Factory = Callable[..., SharedInformerFactory]


def test_dropped_streams_resume_from_the_last_resource_version(
    kube: KubeClient, make_factory: Factory, srv: APIServer, namespace: str
) -> None:
    pods = kube.resource(PODS)
    f = make_factory(namespace=namespace)
    inf = f.informer(PODS)
    rec = Recorder()
    inf.add_event_handler(rec)
    srv.faults.close_watches_after(2)  # read by the server when a watch starts
    f.start()
    assert f.wait_for_cache_sync(5)
    for i in range(10):
        pods.create(namespace, pod(f"p{i}"))
    for i in range(0, 10, 2):
        pods.patch(namespace, f"p{i}", {"metadata": {"labels": {"v": "1"}}})
    for i in range(0, 10, 3):
        pods.delete(namespace, f"p{i}")
    expected = server_state(pods.list(namespace)["items"])
    wait_until(lambda: cache_state(inf.lister.list()) == expected, what="cache == server")
    assert inf.stats.watches > 5  # the stream was dropped again and again...
    assert inf.stats.lists == 1  # ...and never needed a relist
    assert inf.stats.relists_after_gone == 0
    # every event exactly once, in order
    wait_until(lambda: len(rec.events) == 10 + 5 + 4, what="all events")
    assert [op for op, _ in rec.ops()] == ["add"] * 10 + ["update"] * 5 + ["delete"] * 4


@pytest.mark.parametrize("how", ["error-event", "http-410"])
def test_gone_relists_and_delivers_the_differences(
    kube: KubeClient, make_factory: Factory, srv: APIServer, namespace: str, how: str
) -> None:
    pods = kube.resource(PODS)
    for name in ("a", "b", "c"):
        pods.create(namespace, pod(name))
    clock = FakeClock()
    # (the mutation detector would add a clock waiter of its own)
    f = make_factory(namespace=namespace, clock=clock, detect_mutations=False)
    inf = f.informer(PODS)
    rec = Recorder()
    inf.add_event_handler(rec)
    srv.faults.close_watches_after(1)  # read by the server when a watch starts
    f.start()
    assert f.wait_for_cache_sync(5)
    wait_until(lambda: inf.stats.watches == 1, what="watch open")

    # Open a gap: the live stream ends after the next event and the re-watch fails
    # (500), so the informer waits in its backoff on the fake clock.
    srv.faults.fail(500, verbs=["watch"], resources=["pods"], count=1)
    pods.create(namespace, pod("d"))
    assert clock.block_until_waiters(1)
    assert inf.stats.backoffs == 1
    srv.faults.close_watches_after(None)
    wait_until(lambda: len(rec.events) == 4, what="adds of a, b, c, d delivered")

    # During the gap: a delete, an update and a create the informer cannot see.
    last_a = inf.lister.get(namespace, "a")
    pods.delete(namespace, "a")
    pods.patch(namespace, "b", {"metadata": {"labels": {"changed": "yes"}}})
    pods.create(namespace, pod("e"))
    if how == "error-event":
        srv.faults.gone_for_next_watches(1)
    else:
        srv.faults.fail(410, verbs=["watch"], resources=["pods"], count=1)
    before = len(rec.events)
    clock.step(60.0)

    expected = server_state(pods.list(namespace)["items"])
    wait_until(lambda: cache_state(inf.lister.list()) == expected, what="cache == server")
    wait_until(lambda: len(rec.events) == before + 3, what="the differences")
    gap = rec.events[before:]
    ops = sorted((op, name) for op, name, _ in gap)
    assert ops == [("add", "e"), ("delete", "a"), ("update", "b")]
    (tomb,) = [payload for op, _, payload in gap if op == "delete"]
    assert isinstance(tomb, DeletedFinalStateUnknown)
    assert tomb.key == f"{namespace}/a"
    assert tomb.obj is last_a
    (upd,) = [payload for op, _, payload in gap if op == "update"]
    assert upd[1]["metadata"]["labels"] == {"changed": "yes"}
    assert inf.stats.relists_after_gone == 1
    assert inf.stats.lists == 2
    # and the informer keeps watching afterwards
    pods.create(namespace, pod("f"))
    wait_until(lambda: inf.lister.get(namespace, "f") is not None, what="live after relist")


def test_bookmarks_advance_the_resource_version(
    kube: KubeClient, make_factory: Factory, srv: APIServer, namespace: str
) -> None:
    srv.bookmark_frequency = 0.1
    f = make_factory(namespace=namespace)
    inf = f.informer(PODS)
    f.start()
    assert f.wait_for_cache_sync(5)
    start_rv = int(inf.last_sync_resource_version)
    # a change elsewhere moves the server's resourceVersion but sends no pod event
    cm = kube.resource(CONFIGMAPS).create(namespace, {"metadata": {"name": "elsewhere"}})
    cm_rv = int(cm["metadata"]["resourceVersion"])
    assert cm_rv > start_rv
    wait_until(
        lambda: int(inf.last_sync_resource_version) >= cm_rv, what="a bookmark with the new rv"
    )
    assert inf.stats.bookmarks > 0
    assert inf.stats.events == 0


def test_backoff_waits_on_the_clock(
    kube: KubeClient, make_factory: Factory, srv: APIServer, namespace: str
) -> None:
    rule = srv.faults.fail(500, verbs=["list"], resources=["configmaps"])
    clock = FakeClock()
    policy = BackoffPolicy(initial=0.8, maximum=30.0, jitter=0.0)
    f = make_factory(
        namespace=namespace,
        clock=clock,
        options=InformerOptions(backoff=policy, join_timeout=5),
        detect_mutations=False,
    )
    inf = f.informer(CONFIGMAPS)
    f.start()
    waits = []
    for expected_seen in (1, 2, 3, 4):
        assert clock.block_until_waiters(1)
        assert rule.seen == expected_seen  # no retry before the clock moves
        waits.append(clock.now())
        clock.step(0.79 * 2 ** (expected_seen - 1))
        # not yet: 1% short of the delay
        assert clock.block_until_waiters(1)
        assert rule.seen == expected_seen
        clock.step(0.02 * 2 ** (expected_seen - 1))
    assert clock.block_until_waiters(1)
    assert rule.seen == 5
    assert not inf.has_synced()
    srv.faults.reset()
    clock.step(30.0)
    assert inf.wait_for_sync(5)
    assert inf.stats.backoffs == 5
    # stop() interrupts a backoff wait on the fake clock
    srv.faults.fail(500, verbs=["watch"], resources=["configmaps"])
    kube.resource(CONFIGMAPS).create(namespace, {"metadata": {"name": "x"}})
    assert f.stop(5)


def test_silent_watch_is_restarted(
    kube: KubeClient, make_factory: Factory, srv: APIServer, namespace: str
) -> None:
    opts = InformerOptions(inactivity_timeout=0.3, allow_bookmarks=False, join_timeout=5)
    f = make_factory(namespace=namespace, options=opts)
    inf = f.informer(CONFIGMAPS)
    rec = Recorder()
    inf.add_event_handler(rec)
    f.start()
    assert f.wait_for_cache_sync(5)
    wait_until(lambda: inf.stats.watches >= 3, what="restarts of the silent watch")
    assert inf.stats.lists == 1
    kube.resource(CONFIGMAPS).create(namespace, {"metadata": {"name": "after"}})
    wait_until(lambda: rec.ops() == [("add", "after")], what="events after restarts")


def test_errors_during_list_then_recovery(
    kube: KubeClient, make_factory: Factory, srv: APIServer, namespace: str
) -> None:
    kube.resource(PODS).create(namespace, pod("a"))
    srv.faults.fail(503, verbs=["list"], resources=["pods"], count=1)
    policy = BackoffPolicy(initial=0.01, maximum=0.05)
    f = make_factory(namespace=namespace, options=InformerOptions(backoff=policy))
    inf = f.informer(PODS)
    f.start()
    assert f.wait_for_cache_sync(5)
    assert inf.stats.errors == 1
    assert inf.lister.get(namespace, "a") is not None
