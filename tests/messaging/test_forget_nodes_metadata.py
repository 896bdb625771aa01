"""The message layer watches Nodes through a metadata-only informer, and still forgets them.

Forgetting needs only a deleted Node's name, so the runtime container gives the layer
a metadata-only Node informer: its cache holds ``PartialObjectMetadata`` (no status,
images or conditions). Real container, real in-process API server, real LCs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes

from sedna.embedded.apiserver import APIServer
from sedna.runtime import RuntimeContainer
from sedna.runtime.clock import FakeClock
from sedna.runtime.config import GMConfig
from sedna.runtime.informers import (
    DeletedFinalStateUnknown,
    InformerOptions,
    ResourceEventHandlerFuncs,
    SharedInformerFactory,
)
from sedna.runtime.kube import NODES, KubeClient
from sedna.runtime.metrics import Metrics

from .conftest import LayerFactory, Nodes
from .helpers import FakeLC, obj, sample, wait_until


def is_partial(o: Any) -> bool:
    return (
        isinstance(o, dict)
        and set(o) == {"apiVersion", "kind", "metadata"}
        and o["kind"] == "PartialObjectMetadata"
    )


def test_the_container_gives_the_layer_a_metadata_only_node_informer(
    apiserver: Any, nodes: Nodes, tmp_path: Path
) -> None:
    kubeconfig = getattr(apiserver, "kubeconfig", None)
    if kubeconfig is None:
        kubeconfig = str(tmp_path / "kubeconfig")
        apiserver.write_kubeconfig(Path(kubeconfig))
    config = GMConfig.model_validate(
        {
            "kubeConfig": kubeconfig,
            "minResyncPeriodSeconds": 3600,
            "websocket": {"address": "127.0.0.1", "port": 0, "auth": "none"},
        }
    )
    c = RuntimeContainer(config=config)
    layer = c.message_layer()
    informers = c.informers()
    (informer,) = informers.informers  # built with the layer
    assert informer.resource == NODES and informer.metadata_only
    assert informers.informer(NODES, metadata_only=True) is informer
    gone = nodes.create(nodes.name("gone"), heavy=True)
    kept = nodes.create(nodes.name("kept"), heavy=True)
    try:
        informers.start()
        assert informers.wait_for_cache_sync(10)
        cached = informer.lister.get(None, gone)
        assert is_partial(cached)  # no status, images nor conditions in the cache
        assert cached["metadata"]["name"] == gone
        layer.start()
        layer.send(gone, "insert", obj("Model", "m-gone"))
        layer.send(kept, "insert", obj("Model", "m-kept"))
        lc = FakeLC(layer.port, gone)
        try:
            wait_until(lambda: gone in layer.connected_nodes(), what="its LC connected")
            nodes.delete(gone)
            wait_until(lambda: gone not in layer.queued_nodes(), what="forgotten")
            wait_until(lambda: gone not in layer.connected_nodes(), what="its LC closed")
        finally:
            lc.close()
        assert layer.queued_nodes() == [kept]
        assert sample(c.metrics(), "lc_queues_forgotten_total", reason="node_deleted") == 1
    finally:
        layer.stop()
        informers.stop()


def test_a_missed_delete_reaches_the_layer_as_a_metadata_tombstone(
    make_layer: LayerFactory,
    metrics: Metrics,
    nodes: Nodes,
    api_client: kubernetes.client.ApiClient,
    embedded_apiserver: APIServer,
) -> None:
    srv = embedded_apiserver
    gone = nodes.create(nodes.name("gone"), heavy=True)
    kept = nodes.create(nodes.name("kept"), heavy=True)
    layer = make_layer()
    clock = FakeClock()  # the informer's backoff; the layer has its own clock
    factory = SharedInformerFactory(
        KubeClient(api_client),
        min_resync_period=0.0,
        clock=clock,
        options=InformerOptions(inactivity_timeout=30.0, join_timeout=5.0),
        detect_mutations=False,
    )
    informer = factory.informer(NODES, metadata_only=True)
    deletes: list[Any] = []
    informer.add_event_handler(ResourceEventHandlerFuncs(delete=deletes.append))
    try:
        srv.faults.close_watches_after(1)  # read by the server when a watch starts
        reg = layer.watch_nodes(informer)
        factory.start()
        assert factory.wait_for_cache_sync(10) and reg.wait_for_sync(10)
        wait_until(lambda: informer.stats.watches == 1, what="watch open")
        # The live stream ends after the next event and the re-watch fails, so the
        # informer waits in its backoff (on its fake clock) and sees nothing meanwhile.
        srv.faults.fail(500, verbs=["watch"], resources=["nodes"], count=1)
        nodes.create(nodes.name("trigger"), heavy=True)
        assert clock.block_until_waiters(1)
        srv.faults.close_watches_after(None)

        layer.send(gone, "insert", obj("Model", "g"))
        layer.send(kept, "insert", obj("Model", "k"))
        nodes.delete(gone)  # unseen: the watch is down
        srv.faults.gone_for_next_watches(1)  # the next watch gets 410 Gone: relist
        clock.step(60.0)
        wait_until(lambda: gone not in layer.queued_nodes(), what="the tombstone handled")
        # Counted by the informer's thread just after it dropped the queue.
        wait_until(
            lambda: sample(metrics, "lc_messages_forgotten_total", reason="node_deleted") == 1,
            what="the count",
        )
    finally:
        srv.faults.reset()
        factory.stop()
    assert informer.stats.relists_after_gone == 1
    (tomb,) = deletes
    assert isinstance(tomb, DeletedFinalStateUnknown)
    assert tomb.key == gone and is_partial(tomb.obj)
    assert sample(metrics, "lc_messages_forgotten_total", reason="node_deleted") == 1
    assert layer.queue_depth(kept) == 1
