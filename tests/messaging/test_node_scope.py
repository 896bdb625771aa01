"""Node-scoped authorization: an LC reports only on what the GM routed to its node.

Regression tests for the findings: an LC calling itself `node-b` got reports accepted
on a job routed to `edge-node`; forged reports hit another namespace's objects.
"""

from __future__ import annotations

import threading
from typing import Any

from sedna.runtime.clock import FakeClock
from sedna.runtime.messaging import UpstreamMessage
from sedna.runtime.messaging.routes import PendingReports, RouteTable, key_of
from sedna.runtime.metrics import Metrics

from .conftest import LayerFactory
from .helpers import FakeLC, obj, sample, wait_until


def _layer(make_layer: LayerFactory, got: list[UpstreamMessage], **fields: object) -> object:
    layer = make_layer(authorizeReports=True, **fields)
    layer.register_upstream("incrementallearningjob", got.append)
    return layer


def test_a_report_from_another_node_is_rejected(
    make_layer: LayerFactory, metrics: Metrics, logs: list[str]
) -> None:
    got: list[UpstreamMessage] = []
    layer = make_layer(authorizeReports=True, unroutedReportGraceSeconds=0)
    layer.register_upstream("incrementallearningjob", got.append)
    layer.send("edge-node", "insert", obj("IncrementalLearningJob", "job", "ns1"))
    owner = FakeLC(layer.port, "edge-node")
    owner.recv()
    forger = FakeLC(layer.port, "node-b")
    forger.send_status(
        "incrementallearningjob", "ns1", "job", {"phase": "eval", "status": "failed"}
    )
    wait_until(
        lambda: sample(metrics, "lc_messages_rejected_total", reason="not_routed") == 1,
        what="the forged report to be rejected",
    )
    # the same name in another namespace is another object: not routed either
    owner.send_status("incrementallearningjob", "ns2", "job", {"phase": "train"})
    wait_until(
        lambda: sample(metrics, "lc_messages_rejected_total", reason="not_routed") == 2,
        what="the other namespace's report to be rejected",
    )
    owner.send_status("incrementallearningjob", "ns1", "job", {"phase": "train"})
    wait_until(lambda: len(got) == 1, what="the owner's report")
    assert got[0].node_name == "edge-node" and got[0].namespace == "ns1"
    assert any("node node-b" in line and "not_routed" in line for line in logs)


def test_a_delete_ends_the_route(make_layer: LayerFactory, metrics: Metrics) -> None:
    got: list[UpstreamMessage] = []
    layer = make_layer(authorizeReports=True, unroutedReportGraceSeconds=0)
    layer.register_upstream("incrementallearningjob", got.append)
    job = obj("IncrementalLearningJob", "job", "ns1")
    layer.send("train-node", "insert", job)
    layer.send("train-node", "delete", job)
    lc = FakeLC(layer.port, "train-node")
    lc.recv()  # the queue coalesces the insert and the delete of one object
    lc.send_status("incrementallearningjob", "ns1", "job", {"phase": "train"})
    wait_until(
        lambda: sample(metrics, "lc_messages_rejected_total", reason="not_routed") == 1,
        what="the report after the delete to be rejected",
    )
    assert got == []


def test_a_report_ahead_of_its_route_waits_for_it(make_layer: LayerFactory) -> None:
    """After a GM restart, LCs report before the controllers have resent every object."""
    got: list[UpstreamMessage] = []
    layer = make_layer(authorizeReports=True)
    layer.register_upstream("incrementallearningjob", got.append)
    lc = FakeLC(layer.port, "edge-node")
    lc.send_status("incrementallearningjob", "ns1", "job", {"phase": "train"})
    wait_until(lambda: len(layer._pending) == 1, what="the report to be held")
    assert got == []
    layer.send("edge-node", "insert", obj("IncrementalLearningJob", "job", "ns1"))
    wait_until(lambda: len(got) == 1, what="the held report once routed")


def test_held_reports_expire_and_are_bounded() -> None:
    clock = FakeClock()
    pending = PendingReports(per_node=2, grace=30.0, now=clock.now)

    def msg(name: str) -> UpstreamMessage:
        return UpstreamMessage("n", "dataset", "ns", name, "status", {})

    assert pending.hold(msg("a")) == (True, [])
    assert pending.hold(msg("b")) == (True, [])
    held, pushed_out = pending.hold(msg("c"))
    assert held and [m.name for m in pushed_out] == ["a"]
    clock.step(31)
    assert sorted(m.name for m in pending.expire()) == ["b", "c"]
    assert len(pending) == 0


def test_route_table_is_per_node_and_namespace() -> None:
    routes = RouteTable()
    key = key_of("IncrementalLearningJob", "ns", "j")
    assert routes.route(key, "a") and not routes.route(key, "a")
    assert routes.allows(key_of("incrementallearningjob", "ns", "j"), "a")
    assert not routes.allows(key, "b") and not routes.allows(key_of("x", "ns2", "j"), "a")
    routes.forget_node("a")
    assert not routes.allows(key, "a") and len(routes) == 0


def test_a_flood_from_one_node_does_not_delay_another(make_layer: LayerFactory) -> None:
    order: list[str] = []
    in_hand = threading.Event()
    release = threading.Event()

    def handler(m: UpstreamMessage) -> None:
        in_hand.set()
        release.wait(60)
        order.append(m.node_name)

    layer = make_layer()
    layer.register_upstream("dataset", handler)
    flood, quiet = FakeLC(layer.port, "flood"), FakeLC(layer.port, "quiet")
    for i in range(50):
        flood.send_status("dataset", "ns", f"d{i}", {"n": i})
    # the whole flood is in: one report in hand, 49 queued (so 50 queued below means the
    # quiet report is queued too, not the flood's last one arriving late)
    wait_until(in_hand.is_set, what="the first report in hand")
    wait_until(lambda: layer._dispatcher.pending() == 49, what="the flood to queue")
    quiet.send_status("dataset", "ns", "q", {"n": 0})
    wait_until(lambda: layer._dispatcher.pending() >= 50, what="the quiet report to queue")
    release.set()
    wait_until(lambda: len(order) == 51, what="every report")
    # round-robin: the quiet node is served right after the flood's report in hand and one more
    assert order.index("quiet") <= 2


class _NodesInformer:
    """Just enough of a nodes informer: the layer registers its handler here."""

    def __init__(self) -> None:
        self.handler: Any = None

    def add_event_handler(self, handler: Any) -> Any:
        self.handler = handler
        return None


def test_made_up_node_names_get_no_queue_and_no_series(
    make_layer: LayerFactory, metrics: Metrics
) -> None:
    """Regression: 2,000 made-up names once made 2,000 queues and /metrics grew to 8 MB."""
    layer = make_layer()
    nodes = _NodesInformer()
    layer.watch_nodes(nodes)  # type: ignore[arg-type]
    nodes.handler.on_add({"metadata": {"name": "real"}})
    made_up = [FakeLC(layer.port, f"made-up-{i}") for i in range(30)]
    real = FakeLC(layer.port, "real")
    wait_until(lambda: len(layer.connected_nodes()) == 31, what="every connection")
    assert layer.queued_nodes() == ["real"]
    series = [s for m in metrics.registry.collect() if m.name == "lc_queue_depth"
              for s in m.samples]  # fmt: skip
    assert [s.labels["node"] for s in series] == ["real"]
    # once the GM routes something to a node, its queue starts and the LC gets it
    layer.send("made-up-3", "insert", obj("Model", "m"))
    assert made_up[3].recv().header["resourceName"] == "m"
    layer.send("real", "insert", obj("Model", "r"))
    assert real.recv().header["resourceName"] == "r"


def test_a_stale_report_is_skipped_and_counted(make_layer: LayerFactory, metrics: Metrics) -> None:
    """The generic half of "a late report never moves a job backwards": the feature says
    which report is stale (its stage machine knows), the layer never applies it."""
    got: list[int] = []
    layer = make_layer()
    layer.upstream.register(
        "incrementallearningjob",
        lambda m: got.append(m.content["seq"]),
        stale=lambda m: m.content["seq"] < 5 and bool(got),
    )
    lc = FakeLC(layer.port, "n")
    for seq in (5, 6, 2, 7):
        lc.send_status("incrementallearningjob", "ns", "j", {"seq": seq})
    wait_until(
        lambda: sample(metrics, "lc_reports_stale_total", kind="incrementallearningjob") == 1,
        what="the stale report counted",
    )
    wait_until(lambda: len(got) == 3, what="the others applied")
    assert got == [5, 6, 7]


def test_held_reports_are_bounded_in_bytes_over_all_nodes() -> None:
    """Made-up node names must not multiply the per-node bound."""
    pending = PendingReports(per_node=100, grace=30.0, now=FakeClock().now, max_bytes=100)

    def msg(node: str) -> UpstreamMessage:
        return UpstreamMessage(node, "dataset", "ns", "d", "status", {}, size=60)

    assert pending.hold(msg("a"))[0]
    assert not pending.hold(msg("b"))[0]
    assert pending.drop_node("a") and pending.hold(msg("b"))[0]


def test_queued_reports_are_bounded_in_bytes(metrics: Metrics) -> None:
    from sedna.runtime.messaging import UpstreamRegistry
    from sedna.runtime.messaging.upstream import Dispatch, UpstreamDispatcher

    release = threading.Event()
    registry = UpstreamRegistry()
    registry.register("dataset", lambda m: release.wait(60))
    dispatcher = UpstreamDispatcher(registry, metrics, max_bytes=100)
    try:
        outcomes = [
            dispatcher.dispatch(
                UpstreamMessage(f"n{i}", "dataset", "ns", f"d{i}", "status", size=40)
            )
            for i in range(5)
        ]
        # one in the handler, two waiting (80 bytes), the rest refused
        assert outcomes.count(Dispatch.BACKLOG_FULL) >= 2
    finally:
        release.set()
        dispatcher.stop()


def test_held_reports_expire_on_time_without_further_traffic(
    make_layer: LayerFactory, metrics: Metrics
) -> None:
    """Expiry used to run only when the same node sent again or got a route: a node that
    filled the bound and went quiet held it for good."""
    clock = FakeClock()
    got: list[UpstreamMessage] = []
    layer = _layer(make_layer, got, clock=clock, idleQueueTTLSeconds=0)
    lc = FakeLC(layer.port, "edge-node")
    lc.send_status("incrementallearningjob", "ns1", "job", {"phase": "train"})
    wait_until(lambda: len(layer._pending) == 1, what="the report to be held")
    assert clock.block_until_waiters(1), "the expiry timer waits on the clock"
    clock.step(29)
    assert len(layer._pending) == 1
    clock.step(30)  # past the grace (30 s) and the timer's slack; the LC sends nothing
    wait_until(
        lambda: sample(metrics, "lc_messages_rejected_total", reason="not_routed") == 1,
        what="the held report rejected once its grace ended",
    )
    assert len(layer._pending) == 0 and layer._pending.held_bytes == 0
    assert got == [] and layer.connected_nodes() == ["edge-node"]


def test_a_disconnect_drops_the_nodes_held_reports(
    make_layer: LayerFactory, metrics: Metrics
) -> None:
    got: list[UpstreamMessage] = []
    layer = _layer(make_layer, got)
    gone, stays = FakeLC(layer.port, "gone"), FakeLC(layer.port, "stays")
    gone.send_status("incrementallearningjob", "ns1", "a", {"phase": "train"})
    gone.send_status("incrementallearningjob", "ns1", "b", {"phase": "train"})
    stays.send_status("incrementallearningjob", "ns1", "c", {"phase": "train"})
    wait_until(lambda: len(layer._pending) == 3, what="the reports to be held")
    gone.close()
    wait_until(lambda: layer._pending.held_by("gone") == 0, what="gone's reports dropped")
    assert sample(metrics, "lc_messages_rejected_total", reason="not_routed") == 2
    # the other node's report is still held, and handed on once routed
    assert layer._pending.held_by("stays") == 1
    layer.send("stays", "insert", obj("IncrementalLearningJob", "c", "ns1"))
    wait_until(lambda: len(got) == 1, what="the other node's held report")
    assert got[0].node_name == "stays"
