"""An LC that connects again gets everything routed to its node at once, in an order its
LC can use, and nothing routed elsewhere."""

from __future__ import annotations

from sedna.runtime.metrics import Metrics

from .conftest import LayerFactory
from .helpers import FakeLC, Received, obj, sample, wait_until


def _names(got: list[Received]) -> list[tuple[str, str]]:
    return [(m.header["resourceKind"], m.header["resourceName"]) for m in got]


def _send_node_objects(layer: object, node: str) -> None:
    # the jobs first: the replay must still put what they use before them
    send = layer.send  # type: ignore[attr-defined]
    send(node, "insert", obj("IncrementalLearningJob", "job-a", dataset="ds"))
    send(node, "insert", obj("Model", "m1", url="/m1"))
    send(node, "insert", obj("JointInferenceService", "svc"))
    send(node, "insert", obj("Dataset", "ds", url="/d"))
    send(node, "update", obj("Model", "m2", url="/m2"))


def test_a_reconnected_lc_gets_every_routed_object_without_a_new_send(
    make_layer: LayerFactory,
) -> None:
    layer = make_layer()
    _send_node_objects(layer, "edge-1")
    first = FakeLC(layer.port, "edge-1")
    assert len(first.recv_all(5)) == 5
    first.close()
    wait_until(lambda: layer.connected_nodes() == [], what="the LC gone")

    again = FakeLC(layer.port, "edge-1")  # an LC that restarted and holds nothing
    got = again.recv_all(5)
    assert _names(got) == [
        ("dataset", "ds"),
        ("model", "m1"),
        ("model", "m2"),
        ("incrementallearningjob", "job-a"),
        ("jointinferenceservice", "svc"),
    ]
    assert got[2].header["operation"] == "insert"  # updatesAsInsert, as first sent
    assert got[0].payload == obj("Dataset", "ds", url="/d")
    assert again.nothing_waiting()

    # a node deleted from the cluster is forgotten with what it held: nothing replayed
    again.close()
    wait_until(lambda: layer.connected_nodes() == [], what="the LC gone")
    layer.forget_node("edge-1")
    layer.send("edge-1", "insert", obj("Dataset", "fresh", url="/f"))
    last = FakeLC(layer.port, "edge-1")
    assert _names(last.recv_all(1)) == [("dataset", "fresh")]
    assert last.nothing_waiting()


def test_the_replay_carries_the_latest_state_and_forgets_deleted_objects(
    make_layer: LayerFactory,
) -> None:
    layer = make_layer()
    _send_node_objects(layer, "edge-1")
    lc = FakeLC(layer.port, "edge-1")
    lc.recv_all(5)
    lc.close()
    wait_until(lambda: layer.connected_nodes() == [], what="the LC gone")
    # while the LC is away: one object changes, one is deleted
    layer.send("edge-1", "update", obj("Model", "m1", url="/m1-v2"))
    layer.send("edge-1", "delete", obj("JointInferenceService", "svc"))

    again = FakeLC(layer.port, "edge-1")
    got = again.recv_all(5)
    # the waiting delete first, then what the node holds (each kind in the order of its
    # last send), and no insert of the deleted service
    assert _names(got) == [
        ("jointinferenceservice", "svc"),
        ("dataset", "ds"),
        ("model", "m2"),
        ("model", "m1"),
        ("incrementallearningjob", "job-a"),
    ]
    assert got[0].header["operation"] == "delete"
    assert got[3].payload["spec"]["url"] == "/m1-v2"
    assert again.nothing_waiting()


def test_a_reconnect_replays_only_that_nodes_objects(
    make_layer: LayerFactory, metrics: Metrics
) -> None:
    layer = make_layer()
    _send_node_objects(layer, "edge-1")
    layer.send("edge-2", "insert", obj("Dataset", "other", url="/o"))
    one, two = FakeLC(layer.port, "edge-1"), FakeLC(layer.port, "edge-2")
    one.recv_all(5)
    assert _names(two.recv_all(1)) == [("dataset", "other")]
    one.close()
    wait_until(lambda: layer.connected_nodes() == ["edge-2"], what="edge-1 gone")

    again = FakeLC(layer.port, "edge-1")
    assert {m.header["resourceName"] for m in again.recv_all(5)} == {
        "ds",
        "m1",
        "m2",
        "job-a",
        "svc",
    }
    assert two.nothing_waiting()  # the other node is not sent anything again
    assert sample(metrics, "lc_messages_sent_total", kind="dataset") == 3  # ds twice, other once


def test_reconnecting_in_a_loop_never_grows_the_queue(
    make_layer: LayerFactory, logs: list[str]
) -> None:
    """A hostile or crashing LC that reconnects over and over costs one message per routed
    object, never more: the replay coalesces with what is already waiting."""
    layer = make_layer(maxQueuePerNode=3)
    for i in range(5):  # more objects than the bound: the replay holds the newest three
        layer.send("edge-1", "insert", obj("Model", f"m{i}", url=f"/m{i}"))
    for _ in range(4):
        lc = FakeLC(layer.port, "edge-1", hello=False)
        wait_until(lambda: layer.connected_nodes() == ["edge-1"], what="connected")
        lc.close()
        wait_until(lambda: layer.connected_nodes() == [], what="gone")
        assert layer.queue_depth("edge-1") <= 3
    last = FakeLC(layer.port, "edge-1")
    got = last.recv_all(3)
    assert {m.header["resourceName"] for m in got} == {"m2", "m3", "m4"}
    assert last.nothing_waiting()
    # the operator is told that the bound is too small for what this node is routed
    assert any("was routed more objects than websocket.maxQueuePerNode (3)" in x for x in logs)
