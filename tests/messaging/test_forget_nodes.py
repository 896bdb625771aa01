"""The message layer forgets nodes: deleted Node objects, and disconnected idle queues.

Node deletions go through the in-process API server (or the cluster of
SEDNA_TEST_KUBECONFIG), the official client and a real nodes informer; LCs are real
websocket clients. Idle forgetting runs on a FakeClock: time moves only by `step`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from websockets.exceptions import ConnectionClosed

from sedna.embedded.apiserver import APIServer
from sedna.runtime.clock import FakeClock
from sedna.runtime.config import ConfigError, load_config
from sedna.runtime.informers import (
    DeletedFinalStateUnknown,
    InformerOptions,
    ResourceEventHandlerFuncs,
    SharedInformerFactory,
)
from sedna.runtime.kube import NODES, KubeClient
from sedna.runtime.messaging import MessageLayer
from sedna.runtime.messaging.forgetting import NodeDeletionHandler
from sedna.runtime.messaging.queues import NodeQueue, Outgoing, QueueRetired
from sedna.runtime.messaging.wire import Header
from sedna.runtime.metrics import Metrics

from .conftest import LayerFactory, Nodes
from .helpers import FakeLC, obj, sample, wait_until

TTL = 100.0

# ---- helpers ----------------------------------------------------------------------------


def forgotten_messages(metrics: Metrics, reason: str) -> float:
    return sample(metrics, "lc_messages_forgotten_total", reason=reason)


def forgotten_queues(metrics: Metrics, reason: str) -> float:
    return sample(metrics, "lc_queues_forgotten_total", reason=reason)


def depth_series(metrics: Metrics, node: str) -> float | None:
    return metrics.registry.get_sample_value("lc_queue_depth", {"node": node})


@pytest.fixture()
def node_informers(
    api_client: kubernetes.client.ApiClient,
) -> Iterator[Callable[..., SharedInformerFactory]]:
    """Informer factories on the official client, stopped after the test."""
    made: list[SharedInformerFactory] = []

    def make(**kw: Any) -> SharedInformerFactory:
        kw.setdefault("min_resync_period", 0.0)
        kw.setdefault("options", InformerOptions(inactivity_timeout=30.0, join_timeout=5.0))
        kw.setdefault("detect_mutations", True)
        f = SharedInformerFactory(KubeClient(api_client), **kw)
        made.append(f)
        return f

    yield make
    for f in made:
        if not f.stopped:
            f.stop()


def watching(layer: MessageLayer, factory: SharedInformerFactory) -> None:
    """Hook layer up to the factory's nodes informer, as the runtime container does."""
    reg = layer.watch_nodes(factory.informer(NODES))
    factory.start()
    assert factory.wait_for_cache_sync(10)
    assert reg.wait_for_sync(10)


def names_of(lc: FakeLC, n: int) -> list[str]:
    return [r.header["resourceName"] for r in lc.recv_all(n)]


# ---- Node deleted -----------------------------------------------------------------------


def test_deleting_a_node_drops_its_queue_and_counts_it(
    make_layer: LayerFactory,
    metrics: Metrics,
    nodes: Nodes,
    node_informers: Callable[..., SharedInformerFactory],
    logs: list[str],
) -> None:
    gone = nodes.create(nodes.name("gone"))
    kept = nodes.create(nodes.name("kept"))
    layer = make_layer()
    watching(layer, node_informers())
    for i in range(3):
        layer.send(gone, "insert", obj("Model", f"g{i}"))
    layer.send(gone, "update", obj("Model", "g0", v=2))  # coalesces: still 3 waiting
    layer.send(kept, "insert", obj("Model", "k0"))
    layer.send(kept, "insert", obj("Model", "k1"))
    assert layer.queue_depth(gone) == 3

    nodes.delete(gone)

    wait_until(lambda: gone not in layer.queued_nodes(), what="the deleted node forgotten")
    # The informer's thread counts and logs just after it dropped the queue.
    wait_until(lambda: forgotten_messages(metrics, "node_deleted") == 3, what="the count")
    assert forgotten_messages(metrics, "node_deleted") == 3
    assert forgotten_queues(metrics, "node_deleted") == 1
    assert depth_series(metrics, gone) is None  # no series left behind for a gone node
    wait_until(
        lambda: any(
            line.startswith("INFO") and gone in line and "dropped 3 waiting message(s)"
            for line in logs
        ),
        what="the log line",
    )
    # The other node's messages are untouched and still delivered in order.
    assert layer.queue_depth(kept) == 2
    assert depth_series(metrics, kept) == 2
    lc = FakeLC(layer.port, kept)
    assert names_of(lc, 2) == ["k0", "k1"]
    lc.close()


def test_a_connected_node_whose_node_object_is_deleted_is_disconnected(
    make_layer: LayerFactory,
    metrics: Metrics,
    nodes: Nodes,
    node_informers: Callable[..., SharedInformerFactory],
) -> None:
    gone = nodes.create(nodes.name("gone"))
    kept = nodes.create(nodes.name("kept"))
    layer = make_layer()
    watching(layer, node_informers())
    lc_gone = FakeLC(layer.port, gone)
    lc_kept = FakeLC(layer.port, kept)
    wait_until(lambda: layer.connected_nodes() == sorted([gone, kept]), what="both connected")
    layer.send(gone, "insert", obj("Model", "m"))
    assert names_of(lc_gone, 1) == ["m"]

    nodes.delete(gone)

    with pytest.raises(ConnectionClosed):
        lc_gone.ws.recv(timeout=10)
    assert lc_gone.ws.close_code == 1000
    assert lc_gone.ws.close_reason == "node deleted from the cluster"
    wait_until(lambda: layer.connected_nodes() == [kept], what="the deleted node disconnected")
    # The gauge is set just after the connection is unregistered, outside the lock.
    wait_until(lambda: sample(metrics, "lc_connected_nodes") == 1, what="the gauge at 1")
    assert sample(metrics, "lc_connected_nodes") == 1
    assert forgotten_queues(metrics, "node_deleted") == 1
    assert forgotten_messages(metrics, "node_deleted") == 0  # its one message was delivered
    # The other node's connection goes on.
    layer.send(kept, "insert", obj("Model", "still-here"))
    assert names_of(lc_kept, 1) == ["still-here"]
    lc_kept.close()


def test_a_node_that_returns_gets_only_messages_sent_after_its_return(
    make_layer: LayerFactory,
    metrics: Metrics,
    nodes: Nodes,
    node_informers: Callable[..., SharedInformerFactory],
) -> None:
    name = nodes.create(nodes.name("back"))
    layer = make_layer()
    watching(layer, node_informers())
    layer.send(name, "insert", obj("Model", "stale-1"))
    layer.send(name, "delete", obj("Model", "stale-2"))
    nodes.delete(name)
    wait_until(lambda: name not in layer.queued_nodes(), what="the deleted node forgotten")
    wait_until(lambda: forgotten_messages(metrics, "node_deleted") == 2, what="the count")

    nodes.create(name)  # the same name, much later
    lc = FakeLC(layer.port, name)
    wait_until(lambda: layer.connected_nodes() == [name], what="connected")
    layer.send(name, "insert", obj("Model", "fresh"))

    assert names_of(lc, 1) == ["fresh"]
    assert lc.nothing_waiting()
    assert forgotten_messages(metrics, "node_deleted") == 2
    lc.close()


def test_a_delete_missed_while_the_watch_was_down_forgets_the_node(
    make_layer: LayerFactory,
    metrics: Metrics,
    nodes: Nodes,
    node_informers: Callable[..., SharedInformerFactory],
    embedded_apiserver: APIServer,
) -> None:
    """The informer relists after a gap and hands over a tombstone, not the Node itself."""
    srv = embedded_apiserver
    gone = nodes.create(nodes.name("gone"))
    kept = nodes.create(nodes.name("kept"))
    layer = make_layer()
    informer_clock = FakeClock()  # the informer's backoff; the layer has its own clock
    factory = node_informers(clock=informer_clock, detect_mutations=False)
    informer = factory.informer(NODES)
    deletes: list[Any] = []
    informer.add_event_handler(ResourceEventHandlerFuncs(delete=deletes.append))
    try:
        srv.faults.close_watches_after(1)  # read by the server when a watch starts
        watching(layer, factory)
        wait_until(lambda: informer.stats.watches == 1, what="watch open")
        # The live stream ends after the next event and the re-watch fails, so the
        # informer waits in its backoff (on its fake clock) and sees nothing meanwhile.
        srv.faults.fail(500, verbs=["watch"], resources=["nodes"], count=1)
        nodes.create(nodes.name("trigger"))
        assert informer_clock.block_until_waiters(1)
        srv.faults.close_watches_after(None)

        layer.send(gone, "insert", obj("Model", "g"))
        layer.send(kept, "insert", obj("Model", "k"))
        nodes.delete(gone)  # unseen: the watch is down
        srv.faults.gone_for_next_watches(1)  # the next watch gets 410 Gone: relist
        informer_clock.step(60.0)

        wait_until(lambda: gone not in layer.queued_nodes(), what="the tombstone handled")
        wait_until(lambda: forgotten_messages(metrics, "node_deleted") == 1, what="the count")
    finally:
        srv.faults.reset()
    assert informer.stats.relists_after_gone == 1
    assert [type(d) for d in deletes] == [DeletedFinalStateUnknown]
    assert deletes[0].key == gone
    assert forgotten_messages(metrics, "node_deleted") == 1
    assert layer.queue_depth(kept) == 1


def test_tombstones_and_malformed_node_events(
    make_layer: LayerFactory, metrics: Metrics, logs: list[str]
) -> None:
    """The informer's contract allows tombstones; anything without a name is ignored."""
    layer = make_layer()
    for node in ("a", "b", "c"):
        layer.send(node, "insert", obj("Model", f"m-{node}"))
    handler = NodeDeletionHandler(layer.forget_node)

    malformed: list[Any] = [
        {},
        {"metadata": None},
        {"metadata": {}},
        {"metadata": {"name": ""}},
        {"metadata": {"name": 7}},
        "not-an-object",
        None,
        DeletedFinalStateUnknown(key="", obj={}),
        DeletedFinalStateUnknown(key="ns/looks-namespaced", obj={}),
    ]
    for event in malformed:
        handler.on_delete(event)
    handler.on_add({"metadata": {"name": "a"}})
    handler.on_update({"metadata": {"name": "a"}}, {"metadata": {"name": "a"}})
    assert layer.queued_nodes() == ["a", "b", "c"]
    warnings = [line for line in logs if "Node delete event without a node name" in line]
    assert len(warnings) == len(malformed)
    assert all(line.startswith("WARNING") for line in warnings)

    # A tombstone is a real deletion: by its last known object, else by its key.
    handler.on_delete(DeletedFinalStateUnknown(key="a", obj={"metadata": {"name": "a"}}))
    handler.on_delete(DeletedFinalStateUnknown(key="b", obj={"kind": "Node"}))
    assert layer.queued_nodes() == ["c"]
    assert forgotten_messages(metrics, "node_deleted") == 2
    # A node the layer never heard of: nothing to forget, nothing counted.
    handler.on_delete({"metadata": {"name": "unknown"}})
    assert forgotten_queues(metrics, "node_deleted") == 2
    lc = FakeLC(layer.port, "c")
    assert names_of(lc, 1) == ["m-c"]
    lc.close()


# ---- idle TTL ---------------------------------------------------------------------------


def test_idle_ttl_forgets_only_disconnected_idle_queues(
    make_layer: LayerFactory, metrics: Metrics, logs: list[str]
) -> None:
    clock = FakeClock()
    layer = make_layer(clock=clock, idleQueueTTLSeconds=TTL)
    assert clock.block_until_waiters(1)  # the sweeper waits on the clock
    # t=0: two disconnected nodes with a message each, one connected node, and one
    # that is connected now and disconnects later.
    layer.send("idle", "insert", obj("Model", "i"))
    layer.send("recent", "insert", obj("Model", "r0"))
    connected = FakeLC(layer.port, "connected")
    leaving = FakeLC(layer.port, "leaving")
    wait_until(lambda: layer.connected_nodes() == ["connected", "leaving"], what="connected")

    clock.step(60)  # t=60: before any expiry, so the sweeper is not woken
    layer.send("recent", "insert", obj("Model", "r1"))
    leaving.close()
    wait_until(lambda: layer.connected_nodes() == ["connected"], what="leaving disconnected")
    assert clock.waiter_count() == 1

    clock.step(55)  # t=115: "idle" is 115 s quiet; the others 55 s or connected
    wait_until(lambda: forgotten_queues(metrics, "idle") == 1, what="the idle queue forgotten")
    assert layer.queued_nodes() == ["connected", "leaving", "recent"]
    assert layer.queue_depth("recent") == 2
    # The sweeper counts the queue, then its messages, then logs: wait for the last two.
    wait_until(lambda: forgotten_messages(metrics, "idle") == 1, what="its message counted")
    assert forgotten_messages(metrics, "idle") == 1
    assert depth_series(metrics, "idle") is None
    wait_until(
        lambda: any(
            line.startswith("INFO")
            and "node idle" in line
            and "idleQueueTTLSeconds" in line
            and "dropped 1 waiting message(s)" in line
            for line in logs
        ),
        what="the log line",
    )

    assert clock.block_until_waiters(1)  # the sweeper sleeps again
    clock.step(100)  # t=215: "recent" and "leaving" are quiet since t=60
    wait_until(lambda: forgotten_queues(metrics, "idle") == 3, what="the other idle queues")
    assert layer.queued_nodes() == ["connected"]
    wait_until(lambda: forgotten_messages(metrics, "idle") == 3, what="their messages counted")
    assert forgotten_messages(metrics, "idle") == 3

    # The connected node was never forgotten and its connection goes on.
    layer.send("connected", "insert", obj("Model", "c"))
    assert names_of(connected, 1) == ["c"]
    # A forgotten node that comes back gets what is sent from now on, only.
    back = FakeLC(layer.port, "recent")
    wait_until(lambda: "recent" in layer.connected_nodes(), what="recent connected")
    layer.send("recent", "insert", obj("Model", "r2"))
    assert names_of(back, 1) == ["r2"]
    assert back.nothing_waiting()
    connected.close()
    back.close()


def test_idle_ttl_zero_never_forgets(make_layer: LayerFactory, metrics: Metrics) -> None:
    clock = FakeClock()
    layer = make_layer(clock=clock, idleQueueTTLSeconds=0)
    layer.send("away", "insert", obj("Model", "m"))
    assert clock.waiter_count() == 0  # no sweeper at all
    clock.step(10 * 365 * 24 * 3600)
    assert layer.queued_nodes() == ["away"]
    assert forgotten_queues(metrics, "idle") == 0
    lc = FakeLC(layer.port, "away")
    assert names_of(lc, 1) == ["m"]
    lc.close()


def test_default_idle_ttl_is_a_day() -> None:
    assert load_config(None, {}).websocket.idleQueueTTLSeconds == 24 * 3600


# ---- races and config -------------------------------------------------------------------


def test_a_send_racing_a_forget_lands_in_the_new_queue(make_layer: LayerFactory) -> None:
    layer = make_layer(start=False)
    layer.send("n", "insert", obj("Model", "old"))
    looked_up = layer._queue_for("n")  # a sender that looked the queue up...
    assert layer.forget_node("n") == 1  # ...just before the node was forgotten
    with pytest.raises(QueueRetired):
        looked_up.put(Outgoing(Header("default", "model", "x", "insert"), frame="x"))
    layer.send("n", "insert", obj("Model", "new"))
    assert layer._queue_for("n") is not looked_up
    assert layer.queue_depth("n") == 1
    assert len(looked_up) == 0


def test_retired_queue_refuses_everything_and_counts_once() -> None:
    q = NodeQueue("n", 10)
    q.put(Outgoing(Header("ns", "model", "a", "insert"), frame="a"))
    inflight = q.pop_or_arm(lambda: None)
    assert inflight is not None
    q.put(Outgoing(Header("ns", "model", "b", "insert"), frame="b"))
    assert q.retire() == 1
    assert q.retire() == 0
    assert q.retire_if_idle(float("inf")) is None
    assert q.requeue(inflight) is None  # a write that failed after the forget: gone too
    assert len(q) == 0


def test_idle_check_and_put_share_the_queues_clock() -> None:
    clock = FakeClock()
    q = NodeQueue("n", 10, now=clock.now)
    clock.step(5)
    q.put(Outgoing(Header("ns", "model", "a", "insert"), frame="a"))
    assert q.retire_if_idle(cutoff=4.9) is None  # active at 5
    clock.step(10)
    q.touch()  # its node disconnected at 15
    assert q.retire_if_idle(cutoff=14.9) is None
    assert q.retire_if_idle(cutoff=15.0) == 1


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("-1", "greater than or equal to 0"),
        ("abc", 'expected a number, got "abc"'),
        ('"3600"', 'expected a number, got "3600"'),
        ("true", "expected a number, got true"),
        (".inf", "finite number"),
    ],
)
def test_bad_idle_ttl_is_a_config_error_naming_the_key(
    tmp_path: Path, value: str, reason: str
) -> None:
    path = tmp_path / "gm.yaml"
    path.write_text(f"websocket:\n  idleQueueTTLSeconds: {value}\n")
    with pytest.raises(ConfigError) as err:
        load_config(path, {})
    message = str(err.value)
    assert message.startswith(f"{path}: websocket.idleQueueTTLSeconds: ")
    assert reason in message


def test_idle_ttl_from_the_environment() -> None:
    env = {"SEDNA_GM_WEBSOCKET_IDLEQUEUETTLSECONDS": "600"}
    assert load_config(None, env).websocket.idleQueueTTLSeconds == 600
    with pytest.raises(ConfigError, match=r"websocket\.idleQueueTTLSeconds"):
        load_config(None, {"SEDNA_GM_WEBSOCKET_IDLEQUEUETTLSECONDS": "-5"})
