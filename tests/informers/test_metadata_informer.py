"""Metadata-only informers: a cache of ``PartialObjectMetadata``, beside full informers.

Everything runs against the in-process API server through the official client; the
cache is compared with what the server holds, read back with full GETs and lists.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sedna.embedded.apiserver import APIServer
from sedna.runtime import SharedInformerFactory as PublicFactory
from sedna.runtime.clock import FakeClock
from sedna.runtime.informers import (
    DeletedFinalStateUnknown,
    SharedInformerFactory,
    meta_namespace_key,
)
from sedna.runtime.kube import CONFIGMAPS, NODES, PODS, KubeClient

from .helpers import Recorder, pod, wait_until

Factory = Callable[..., SharedInformerFactory]
PARTIAL_KEYS = {"apiVersion", "kind", "metadata"}


def is_partial(obj: Mapping[str, Any]) -> bool:
    return (
        set(obj) == PARTIAL_KEYS
        and obj["kind"] == "PartialObjectMetadata"
        and obj["apiVersion"] == "meta.k8s.io/v1"
    )


def server_metadata(kube: KubeClient, namespace: str) -> dict[str, dict[str, Any]]:
    """key -> metadata of every pod the server holds (read as full objects)."""
    return {
        meta_namespace_key(o): o["metadata"] for o in kube.resource(PODS).list(namespace)["items"]
    }


def cache_metadata(objs: list[Mapping[str, Any]]) -> dict[str, Any]:
    return {meta_namespace_key(o): o["metadata"] for o in objs}


def test_the_cache_holds_the_servers_metadata_through_adds_updates_and_deletes(
    kube: KubeClient, make_factory: Factory, namespace: str
) -> None:
    pods = kube.resource(PODS)
    owner = kube.resource(CONFIGMAPS).create(namespace, {"metadata": {"name": "owner"}})
    for i in range(3):
        pods.create(namespace, pod(f"early{i}", labels={"i": str(i)}, owner=owner))
    f = make_factory(namespace=namespace)
    inf = f.informer(PODS, metadata_only=True)
    assert inf.metadata_only
    rec = Recorder()
    inf.add_event_handler(rec)
    f.start()
    assert f.wait_for_cache_sync(5)

    for i in range(3):
        pods.create(namespace, pod(f"late{i}", labels={"i": str(i)}))
    pods.patch(namespace, "early0", {"metadata": {"labels": {"changed": "yes"}}})
    pods.patch(namespace, "late1", {"metadata": {"annotations": {"note": "n"}}})
    pods.delete(namespace, "early2")
    pods.delete(namespace, "late2")

    expected = server_metadata(kube, namespace)
    wait_until(lambda: cache_metadata(inf.lister.list()) == expected, what="cache == server")
    assert all(is_partial(o) for o in inf.lister.list())
    wait_until(lambda: len(rec.events) == 3 + 3 + 2 + 2, what="every event")
    assert [op for op, _ in rec.ops()] == ["add"] * 6 + ["update"] * 2 + ["delete"] * 2
    for _, _, payload in rec.events:
        objs = payload if isinstance(payload, tuple) else (payload,)
        assert all(is_partial(o) for o in objs)

    # listers and indexes read metadata only, so they work unchanged
    assert inf.lister.get(namespace, "early0")["metadata"]["labels"]["changed"] == "yes"
    assert sorted(o["metadata"]["name"] for o in inf.lister.list(namespace, {"i": "1"})) == [
        "early1",
        "late1",
    ]
    owned = inf.lister.by_owner_uid(owner["metadata"]["uid"])
    assert sorted(o["metadata"]["name"] for o in owned) == ["early0", "early1"]
    inf.add_indexer("by-note", lambda o: [o["metadata"].get("annotations", {}).get("note", "")])
    assert [o["metadata"]["name"] for o in inf.lister.by_index("by-note", "n")] == ["late1"]


def test_a_delete_missed_during_a_410_gap_comes_as_a_tombstone(
    kube: KubeClient, make_factory: Factory, srv: APIServer, namespace: str
) -> None:
    pods = kube.resource(PODS)
    for name in ("a", "b", "c"):
        pods.create(namespace, pod(name))
    clock = FakeClock()
    # (the mutation detector would add a clock waiter of its own)
    f = make_factory(namespace=namespace, clock=clock, detect_mutations=False)
    inf = f.informer(PODS, metadata_only=True)
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
    srv.faults.close_watches_after(None)
    wait_until(lambda: len(rec.events) == 4, what="adds of a, b, c, d delivered")

    last_a = inf.lister.get(namespace, "a")
    pods.delete(namespace, "a")  # unseen: the watch is down
    pods.patch(namespace, "b", {"metadata": {"labels": {"changed": "yes"}}})
    srv.faults.gone_for_next_watches(1)  # the next watch gets 410 Gone: relist
    before = len(rec.events)
    clock.step(60.0)

    expected = server_metadata(kube, namespace)
    wait_until(lambda: cache_metadata(inf.lister.list()) == expected, what="cache == server")
    wait_until(lambda: len(rec.events) == before + 2, what="the differences")
    gap = {op: payload for op, _, payload in rec.events[before:]}
    tomb = gap["delete"]
    assert isinstance(tomb, DeletedFinalStateUnknown)
    assert tomb.key == f"{namespace}/a"
    assert tomb.obj is last_a and is_partial(tomb.obj)
    old_b, new_b = gap["update"]
    assert is_partial(old_b) and is_partial(new_b)
    assert new_b["metadata"]["labels"] == {"changed": "yes"}
    assert inf.stats.relists_after_gone == 1 and inf.stats.lists == 2
    # it keeps watching afterwards
    pods.create(namespace, pod("e"))
    wait_until(lambda: inf.lister.get(namespace, "e") is not None, what="live after relist")
    assert is_partial(inf.lister.get(namespace, "e"))


def test_resync_redelivers_the_metadata_objects(
    kube: KubeClient, make_factory: Factory, namespace: str
) -> None:
    for i in range(2):
        kube.resource(PODS).create(namespace, pod(f"p{i}"))
    clock = FakeClock()
    f = make_factory(namespace=namespace, min_resync_period=10.0, clock=clock)
    inf = f.informer(PODS, metadata_only=True)
    rec = Recorder()
    inf.add_event_handler(rec)
    f.start()
    assert f.wait_for_cache_sync(5)
    wait_until(lambda: len(rec.events) == 2, what="initial adds")
    assert clock.block_until_waiters(1)  # the dispatch thread waits for the resync
    clock.step(20.0)
    wait_until(lambda: len(rec.of("update")) == 2, what="resync updates")
    for _, _, (old, new) in rec.of("update"):
        assert old is new and is_partial(new)


def test_a_metadata_informer_coexists_with_the_full_one(
    kube: KubeClient, make_factory: Factory, namespace: str
) -> None:
    pods = kube.resource(PODS)
    pods.create(namespace, pod("x", labels={"v": "1"}))
    f = make_factory(namespace=namespace)
    full = f.informer(PODS)
    meta = f.informer(PODS, metadata_only=True)
    assert meta is not full
    assert f.informer(PODS) is full
    assert f.informer(PODS, metadata_only=True) is meta
    assert f.lister(PODS, metadata_only=True) is meta.lister
    assert full.name == meta.name == f"pods@{namespace}"
    assert not full.metadata_only and meta.metadata_only
    full_rec, meta_rec = Recorder(), Recorder()
    full.add_event_handler(full_rec)
    meta.add_event_handler(meta_rec)
    f.start()
    assert f.wait_for_cache_sync(5)
    threads = {t.name for inf in (full, meta) for t in inf._threads}
    assert len(threads) == 4  # each has its own list/watch and dispatch threads

    pods.patch(namespace, "x", {"metadata": {"labels": {"v": "2"}}})
    wait_until(lambda: len(full_rec.events) == 2 and len(meta_rec.events) == 2, what="both")
    got_full = full.lister.get(namespace, "x")
    got_meta = meta.lister.get(namespace, "x")
    assert got_full["kind"] == "Pod" and got_full["spec"]["containers"]
    assert is_partial(got_meta)
    assert got_meta["metadata"] == got_full["metadata"]
    assert got_meta["metadata"]["labels"] == {"v": "2"}


def test_a_metadata_informer_of_cluster_scoped_nodes_from_the_public_api(
    kube: KubeClient, make_factory: Factory, namespace: str
) -> None:
    """``sedna.runtime.SharedInformerFactory`` is the factory: no private import needed."""
    assert PublicFactory is SharedInformerFactory
    nodes = kube.resource(NODES)
    name = f"{namespace}-node"
    status = {"images": [{"names": [f"img-{i}"], "sizeBytes": 1} for i in range(20)]}
    nodes.create(None, {"metadata": {"name": name, "labels": {"t": namespace}}, "status": status})
    try:
        f = make_factory()
        inf = f.informer(NODES, label_selector=f"t={namespace}", metadata_only=True)
        f.start()
        assert f.wait_for_cache_sync(5)
        cached = inf.lister.get(None, name)
        assert cached is not None and is_partial(cached)
        assert cached["metadata"] == nodes.get(None, name)["metadata"]
        assert nodes.get(None, name, metadata_only=True) == cached
        nodes.delete(None, name)
        wait_until(lambda: inf.lister.get(None, name) is None, what="node gone from the cache")
    finally:
        if nodes.list(field_selector=f"metadata.name={name}")["items"]:
            nodes.delete(None, name)
