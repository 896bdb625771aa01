"""Shared informers against the in-process API server over real HTTP."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from sedna.embedded.apiserver import APIServer
from sedna.runtime.clock import FakeClock
from sedna.runtime.informers import (
    CacheMutationError,
    ResourceEventHandlerFuncs,
    SharedInformerFactory,
)
from sedna.runtime.kube import CONFIGMAPS, MODELS, NAMESPACES, PODS, ApiError, KubeClient

from .helpers import Recorder, pod, wait_until

Factory = Callable[..., SharedInformerFactory]


def test_informer_is_shared_per_resource_and_scope(make_factory: Factory, namespace: str) -> None:
    f = make_factory(namespace=namespace)
    assert f.informer(PODS) is f.informer(PODS)
    assert f.informer(PODS) is not f.informer(PODS, namespace="other")
    assert f.informer(NAMESPACES).namespace == ""  # cluster-scoped ignores the scope


def test_sees_creates_updates_deletes_in_order(
    kube: KubeClient, make_factory: Factory, namespace: str
) -> None:
    pods = kube.resource(PODS)
    pods.create(namespace, pod("pre"))
    f = make_factory(namespace=namespace)
    inf = f.informer(PODS)
    rec = Recorder()
    reg = inf.add_event_handler(rec)
    f.start()
    assert f.wait_for_cache_sync(5)
    wait_until(reg.has_synced, what="handler sync")
    assert rec.ops() == [("add", "pre")]

    pods.create(namespace, pod("a"))
    pods.patch(namespace, "a", {"metadata": {"labels": {"v": "1"}}})
    pods.patch(namespace, "a", {"metadata": {"labels": {"v": "2"}}})
    pods.delete(namespace, "a")
    wait_until(lambda: len(rec.events) == 5, what="5 events")
    assert rec.ops() == [
        ("add", "pre"),
        ("add", "a"),
        ("update", "a"),
        ("update", "a"),
        ("delete", "a"),
    ]
    (_, _, (_, new)), (_, _, (old2, new2)) = rec.of("update")
    assert new["metadata"]["labels"] == {"v": "1"} and new2["metadata"]["labels"] == {"v": "2"}
    assert old2 is new
    # handlers run on the informer's dispatch thread, never on the watch thread
    assert rec.threads == {f"informer-{inf.name}-dispatch"}
    # the cache was updated before the handler ran
    assert inf.lister.get(namespace, "a") is None
    assert inf.lister.get(namespace, "pre") is not None
    assert inf.stats.lists == 1


def test_slow_handler_does_not_stall_the_cache(
    kube: KubeClient, make_factory: Factory, namespace: str
) -> None:
    gate = threading.Event()
    f = make_factory(namespace=namespace)
    inf = f.informer(CONFIGMAPS)

    def slow(obj: Any) -> None:
        gate.wait(60)  # released by the test; the bound only ends a failed one

    inf.add_event_handler(ResourceEventHandlerFuncs(add=slow))
    f.start()
    assert f.wait_for_cache_sync(5)
    cms = kube.resource(CONFIGMAPS)
    for i in range(5):
        cms.create(namespace, {"metadata": {"name": f"c{i}"}})
    wait_until(lambda: len(inf.lister.list(namespace)) == 5, what="cache filled")
    gate.set()


def test_late_handler_gets_the_cache_as_adds(
    kube: KubeClient, make_factory: Factory, namespace: str
) -> None:
    for i in range(3):
        kube.resource(PODS).create(namespace, pod(f"p{i}"))
    f = make_factory(namespace=namespace)
    inf = f.informer(PODS)
    f.start()
    assert f.wait_for_cache_sync(5)
    rec = Recorder()
    reg = inf.add_event_handler(rec)
    assert reg.wait_for_sync(5)
    assert sorted(rec.ops()) == [("add", "p0"), ("add", "p1"), ("add", "p2")]
    kube.resource(PODS).create(namespace, pod("p3"))
    wait_until(lambda: ("add", "p3") in rec.ops(), what="live add after the initial ones")
    assert rec.ops()[-1] == ("add", "p3")
    # informer requested after start is started by the factory
    late = f.informer(CONFIGMAPS)
    assert late.wait_for_sync(5)


def test_listers_by_selector_and_owner(
    kube: KubeClient, make_factory: Factory, namespace: str
) -> None:
    owner = kube.resource(MODELS).create(
        namespace, {"metadata": {"name": "m"}, "spec": {"url": "s3://b/m", "format": "pb"}}
    )
    pods = kube.resource(PODS)
    pods.create(namespace, pod("a", {"app": "web", "tier": "front"}, owner))
    pods.create(namespace, pod("b", {"app": "web", "tier": "back"}, owner, controller=False))
    pods.create(namespace, pod("c", {"app": "db"}))
    f = make_factory()
    lister = f.lister(PODS)
    f.start()
    assert f.wait_for_cache_sync(5)

    def names(objs: list[Any]) -> list[str]:
        return sorted(o["metadata"]["name"] for o in objs)

    assert names(lister.list(namespace)) == ["a", "b", "c"]
    assert names(lister.list(namespace, {"app": "web"})) == ["a", "b"]
    assert names(lister.list(namespace, "app=web,tier!=front")) == ["b"]
    assert names(lister.list(namespace, "app in (db, cache)")) == ["c"]
    assert names(lister.list(namespace, "!tier")) == ["c"]
    assert names(lister.list(namespace, "tier")) == ["a", "b"]
    assert names(lister.by_owner_uid(owner["metadata"]["uid"])) == ["a"]
    listed = lister.get(namespace, "a")
    assert listed is not None and listed["kind"] == "Pod" and listed["apiVersion"] == "v1"
    inf = f.informer(PODS)
    inf.add_indexer("by-tier", lambda o: [(o["metadata"].get("labels") or {}).get("tier", "")])
    assert names(lister.by_index("by-tier", "back")) == ["b"]


def test_mutation_detector_catches_a_mutating_handler(
    kube: KubeClient, make_factory: Factory, namespace: str
) -> None:
    def bad(obj: Any) -> None:
        obj["metadata"]["labels"]["touched"] = "yes"

    f = make_factory(namespace=namespace, detect_mutations=True)
    f.informer(PODS).add_event_handler(ResourceEventHandlerFuncs(add=bad))
    f.start()
    kube.resource(PODS).create(namespace, pod("victim", {"a": "b"}))
    wait_until(
        lambda: (
            bool(f.informer(PODS).lister.list(namespace))
            and "touched" in f.informer(PODS).lister.list(namespace)[0]["metadata"]["labels"]
        ),
        what="the mutation",
    )
    with pytest.raises(CacheMutationError, match=rf"{namespace}/victim.*metadata\.labels\.touched"):
        f.stop()


def test_mutation_detector_from_env(kube: KubeClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEDNA_CACHE_MUTATION_DETECTOR", "1")
    assert SharedInformerFactory(kube).detect_mutations
    monkeypatch.setenv("SEDNA_CACHE_MUTATION_DETECTOR", "0")
    assert not SharedInformerFactory(kube).detect_mutations


def test_stop_joins_all_threads(kube: KubeClient, make_factory: Factory, namespace: str) -> None:
    f = make_factory(namespace=namespace, min_resync_period=1.0)
    for res in (PODS, CONFIGMAPS, MODELS):
        f.informer(res).add_event_handler(Recorder())
    f.start()
    assert f.wait_for_cache_sync(5)
    names = {t.name for inf in f.informers for t in inf._threads}
    assert len(names) == 6
    assert f.stop(5)
    alive = {t.name for t in threading.enumerate()}
    assert not names & alive
    with pytest.raises(RuntimeError):
        f.informer(PODS)


def test_a_held_informer_lists_only_once_let_go(make_factory: Factory, namespace: str) -> None:
    """`start(after=event)`, as the factory starts its informers: every thread first,
    then the lists. The held one started first, so had it not waited it would have
    listed by the time the other one synced."""
    f = make_factory(namespace=namespace)
    held, free = f.informer(PODS), f.informer(CONFIGMAPS)
    go = threading.Event()
    held.start(after=go)
    free.start()
    assert free.wait_for_sync(5)
    assert held.stats.lists == 0
    assert not held.has_synced()
    go.set()
    assert held.wait_for_sync(5)


def test_factory_start_lets_every_informer_list(make_factory: Factory, namespace: str) -> None:
    f = make_factory(namespace=namespace)
    informers = [f.informer(res) for res in (PODS, CONFIGMAPS, MODELS)]
    f.start()
    assert f.wait_for_cache_sync(5)
    assert all(inf.stats.lists == 1 for inf in informers)


def test_handler_exception_does_not_stop_delivery(
    kube: KubeClient, make_factory: Factory, namespace: str
) -> None:
    def boom(obj: Any) -> None:
        raise RuntimeError("handler bug")

    rec = Recorder()
    f = make_factory(namespace=namespace)
    inf = f.informer(PODS)
    inf.add_event_handler(ResourceEventHandlerFuncs(add=boom))
    inf.add_event_handler(rec)
    f.start()
    kube.resource(PODS).create(namespace, pod("x"))
    kube.resource(PODS).create(namespace, pod("y"))
    wait_until(lambda: len(rec.events) == 2, what="both adds")
    assert inf.stats.handler_errors == 2


def test_resync_redelivers_from_cache_without_api_calls(
    kube: KubeClient, make_factory: Factory, srv: Any, namespace: str
) -> None:
    for i in range(3):
        kube.resource(PODS).create(namespace, pod(f"p{i}"))
    clock = FakeClock()
    f = make_factory(namespace=namespace, min_resync_period=10.0, clock=clock)
    assert 10.0 <= f.resync_period < 20.0
    inf = f.informer(PODS)
    rec = Recorder()
    inf.add_event_handler(rec)
    f.start()
    assert f.wait_for_cache_sync(5)
    wait_until(lambda: len(rec.events) == 3, what="initial adds")
    wait_until(lambda: inf.stats.watches == 1, what="the watch to be open")
    # count every request the server gets for pods from now on (never fails)
    counter = srv.faults.fail(500, every=10**9, resources=["pods"])
    assert clock.block_until_waiters(1)  # the dispatch thread waits for the resync
    clock.step(20.0)
    wait_until(lambda: len(rec.of("update")) == 3, what="resync updates")
    for _, _, (old, new) in rec.of("update"):
        assert old is new
        assert inf.lister.get(namespace, new["metadata"]["name"]) is new
    assert counter.seen == 0
    assert inf.stats.lists == 1 and inf.stats.resyncs == 1


def test_watch_stream_without_a_name_does_not_crash(
    kube: KubeClient, make_factory: Factory, srv: Any, namespace: str
) -> None:
    from sedna.embedded.apiserver.watch import Event

    f = make_factory(namespace=namespace)
    inf = f.informer(CONFIGMAPS)
    rec = Recorder()
    inf.add_event_handler(rec)
    f.start()
    assert f.wait_for_cache_sync(5)
    wait_until(lambda: inf.stats.watches == 1, what="watch")
    rt = srv.registry.get("", "v1", "configmaps")
    bad = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"namespace": namespace, "resourceVersion": str(srv.store.rv)},
    }
    srv._call(lambda: srv.hub.publish(Event("ADDED", rt.key, namespace, bad, None, srv.store.rv)))
    kube.resource(CONFIGMAPS).create(namespace, {"metadata": {"name": "good"}})
    wait_until(lambda: rec.ops() == [("add", "good")], what="the good object")
    assert inf.stats.malformed == 1
    assert inf.stats.watches == 1  # the stream went on


def test_get_or_read_confirms_a_cache_miss_with_the_server(
    kube: KubeClient, make_factory: Factory, srv: APIServer, namespace: str
) -> None:
    """What handlers use when another resource's cache may not have synced yet."""
    pods = kube.resource(PODS)
    pods.create(namespace, pod("p"))
    f = make_factory(namespace=namespace)
    inf = f.informer(PODS)  # not started: every look-up misses the cache
    read = inf.get_or_read(namespace, "p")
    assert read is not None and read["metadata"]["name"] == "p"
    assert inf.lister.get(namespace, "p") is None  # a read does not fill the cache
    assert inf.get_or_read(namespace, "absent") is None
    # Any other error is the caller's to handle.
    srv.faults.fail(503, verbs=["get"], resources=["pods"], count=1)
    with pytest.raises(ApiError) as info:
        inf.get_or_read(namespace, "absent")
    assert info.value.status == 503
    f.start()
    assert f.wait_for_cache_sync(5)
    assert inf.get_or_read(namespace, "p") is inf.lister.get(namespace, "p")  # a cache hit
