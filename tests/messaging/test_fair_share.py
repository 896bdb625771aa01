"""The report buffers shared by every node are shared fairly: a flood costs only its sender.

Regression tests for the findings: one node sending reports of maxFrameBytes filled the
kind's queue (maxReportBytes) and every other node's report was refused
`handler_backlog`; one node filling maxUnroutedReportBytes kept every other node's
early report out (`not_routed`).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from sedna.runtime.clock import FakeClock
from sedna.runtime.messaging import UpstreamMessage
from sedna.runtime.messaging.fair_share import make_room
from sedna.runtime.messaging.routes import PendingReports
from sedna.runtime.messaging.upstream import _FairQueue
from sedna.runtime.metrics import Metrics

from .conftest import LayerFactory
from .helpers import FakeLC, frame, obj, sample, wait_until


def report(node: str, name: str = "d", size: int = 0) -> UpstreamMessage:
    return UpstreamMessage(node, "dataset", "ns", name, "status", {}, size=size)


def _popper(
    held: dict[str, list[int]],
) -> tuple[list[tuple[str, int]], Callable[[str], int | None]]:
    popped: list[tuple[str, int]] = []

    def pop_oldest(node: str) -> int | None:
        if not held.get(node):
            return None
        size = held[node].pop(0)
        popped.append((node, size))
        return size

    return popped, pop_oldest


def test_the_node_holding_the_most_gives_way() -> None:
    held = {"flood": [10] * 10, "quiet": [5]}
    popped, pop_oldest = _popper(held)
    loads = {n: sum(s) for n, s in held.items()}
    assert make_room(loads, "quiet", 5, 10, pop_oldest)
    assert popped == [("flood", 10)]


def test_the_sender_over_its_share_is_refused_and_nothing_is_dropped() -> None:
    held = {"flood": [10] * 10, "quiet": [5]}
    popped, pop_oldest = _popper(held)
    loads = {n: sum(s) for n, s in held.items()}
    assert not make_room(loads, "flood", 10, 10, pop_oldest)
    assert popped == []


def test_nodes_over_the_level_come_down_to_it_most_first() -> None:
    held = {"a": [10] * 6, "b": [10] * 5, "c": [10] * 1}
    popped, pop_oldest = _popper(held)
    loads = {n: sum(s) for n, s in held.items()}
    # 120 held with c's new one, 20 to free: the level is 45; c is under it
    assert make_room(loads, "c", 10, 20, pop_oldest)
    # the most first: a alone frees enough, whole reports at a time
    assert popped == [("a", 10), ("a", 10)]


def test_a_full_upstream_queue_drops_the_flooders_report_not_the_newcomers() -> None:
    q = _FairQueue(per_node=1000, total=1000, max_bytes=4000)
    for i in range(4):
        assert q.put(report("flood", f"f{i}", 1000)) == (True, [])
    # the flood alone is refused once full ...
    assert q.put(report("flood", "f4", 1000)) == (False, [])
    # ... and another node's report takes the place of the flood's oldest
    accepted, dropped = q.put(report("quiet", "q", 100))
    assert accepted and [m.name for m in dropped] == ["f0"]
    assert q.bytes <= 4000
    # the flood's queue lost its oldest; round-robin still serves both
    served = [q.get() for _ in range(4)]
    assert [m.name for m in served if m is not None] == ["f1", "q", "f2", "f3"]
    assert len(q) == 0 and q.bytes == 0


def test_a_full_upstream_queue_shares_its_count_too() -> None:
    q = _FairQueue(per_node=1000, total=3, max_bytes=10**6)
    for i in range(3):
        assert q.put(report("flood", f"f{i}"))[0]
    assert not q.put(report("flood", "f3"))[0]
    accepted, dropped = q.put(report("quiet", "q"))
    assert accepted and [m.name for m in dropped] == ["f0"] and len(q) == 3


def test_a_node_emptied_by_the_fair_share_leaves_the_serving_ring() -> None:
    q = _FairQueue(per_node=1000, total=1000, max_bytes=1000)
    assert q.put(report("big", "b", 1000))[0]
    accepted, dropped = q.put(report("small", "s", 10))
    assert accepted and [m.name for m in dropped] == ["b"]
    assert q.put(report("big", "b2", 500))[0]
    served = [q.get(), q.get()]
    assert [m.name for m in served if m is not None] == ["s", "b2"]
    q.close()
    assert q.get() is None


def test_held_reports_of_a_flooder_give_way_to_another_nodes() -> None:
    """The reported starvation: one node fills maxUnroutedReportBytes and goes quiet."""
    pending = PendingReports(per_node=100, grace=30.0, now=FakeClock().now, max_bytes=16_000)
    for i in range(16):
        assert pending.hold(report("flood", f"f{i}", 1000)) == (True, [])
    assert pending.hold(report("flood", "f16", 1000)) == (False, [])
    held, pushed_out = pending.hold(report("early", "e", 200))
    assert held and [(m.node_name, m.name) for m in pushed_out] == [("flood", "f0")]
    assert pending.held_bytes <= 16_000
    assert pending.held_by("early") == 1 and pending.held_by("flood") == 15


def test_held_reports_end_with_their_grace_on_any_node() -> None:
    clock = FakeClock()
    pending = PendingReports(per_node=100, grace=30.0, now=clock.now)
    assert pending.next_expiry() is None
    pending.hold(report("a", "x"))
    clock.step(10)
    pending.hold(report("b", "y"))
    assert pending.next_expiry() == 30.0
    clock.step(20)
    assert [m.name for m in pending.expire()] == ["x"]
    assert pending.next_expiry() == 40.0 and len(pending) == 1
    clock.step(10)
    assert [m.name for m in pending.expire()] == ["y"]
    assert pending.next_expiry() is None and pending.held_bytes == 0


def test_dropping_a_node_gives_its_bytes_back() -> None:
    pending = PendingReports(per_node=100, grace=30.0, now=FakeClock().now, max_bytes=1000)
    pending.hold(report("a", "x", 600))
    pending.hold(report("b", "y", 300))
    assert [m.name for m in pending.drop_node("a")] == ["x"]
    assert pending.held_bytes == 300 and pending.drop_node("a") == []


# ---- properties: the bounds hold, and a node within its share never loses to another ----

puts = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.sampled_from("abcd"), st.integers(0, 400)),
        st.tuples(st.just("get"), st.just(""), st.just(0)),
    ),
    max_size=80,
)


@given(puts, st.integers(1, 6), st.integers(1, 12), st.integers(1, 1000))
def test_the_upstream_queue_keeps_its_bounds_and_its_fairness(
    operations: list[tuple[str, str, int]], per_node: int, total: int, max_bytes: int
) -> None:
    q = _FairQueue(per_node, total, max_bytes)
    loads: dict[str, list[int]] = defaultdict(list)
    for i, (op, node, size) in enumerate(operations):
        if op == "get":
            if len(q):
                m = q.get()
                assert m is not None
                loads[m.node_name].remove(m.size)
            continue
        before = {n: (len(s), sum(s)) for n, s in loads.items() if s}
        holders = len(set(before) | {node})
        accepted, dropped = q.put(report(node, f"r{i}", size))
        for m in dropped:
            loads[m.node_name].remove(m.size)
            if m.node_name != node:
                count, held = before[m.node_name]
                # only a node over its share of a bound gives way to another node
                assert count * holders > total or held * holders > max_bytes
        if accepted:
            loads[node].append(size)
        else:
            assert not dropped
            count, held = before.get(node, (0, 0))
            if size <= max_bytes and count < per_node:
                # refused only over its share, the new report counted
                assert (count + 1) * holders > total or (held + size) * holders > max_bytes
        assert len(q) == sum(len(s) for s in loads.values()) <= total
        assert q.bytes == sum(sum(s) for s in loads.values()) <= max_bytes
        assert all(len(s) <= per_node for s in loads.values())


@given(puts, st.integers(1, 6), st.integers(0, 1000))
def test_held_reports_keep_their_bounds_and_their_fairness(
    operations: list[tuple[str, str, int]], per_node: int, max_bytes: int
) -> None:
    pending = PendingReports(per_node, 30.0, FakeClock().now, max_bytes=max_bytes)
    loads: dict[str, list[int]] = defaultdict(list)
    for i, (op, node, size) in enumerate(operations):
        if op == "get":
            continue
        before = {n: sum(s) for n, s in loads.items() if s}
        holders = len(set(before) | {node})
        held, out = pending.hold(report(node, f"r{i}", size))
        for m in out:
            loads[m.node_name].remove(m.size)
            if m.node_name != node:
                assert before[m.node_name] * holders > max_bytes
        if held:
            loads[node].append(size)
        elif size <= max_bytes:
            assert (before.get(node, 0) + size) * holders > max_bytes
        assert pending.held_bytes == sum(sum(s) for s in loads.values()) <= max_bytes
        assert all(pending.held_by(n) == len(s) <= per_node for n, s in loads.items())


# ---- through the LC websocket ------------------------------------------------------------


def _big(name: str) -> str:
    return frame("dataset", "ns", name, {"pad": "x" * 900})


def test_a_node_flooding_large_reports_is_the_only_one_refused(
    make_layer: LayerFactory, metrics: Metrics
) -> None:
    """ws_backlog_starve: reports of maxFrameBytes from one node filled maxReportBytes."""
    release, busy = threading.Event(), threading.Event()
    got: list[tuple[str, str]] = []

    def handler(m: UpstreamMessage) -> None:
        busy.set()
        release.wait(60)  # released by the test; the bound only ends a failed one
        got.append((m.node_name, m.name))

    size = len(_big("f0"))
    small = len(frame("dataset", "ns", "q", {"n": 1}))
    layer = make_layer(maxReportBytes=3 * size + small // 2)
    layer.register_upstream("dataset", handler)
    try:
        flood, quiet = FakeLC(layer.port, "flood"), FakeLC(layer.port, "quiet")
        flood.send_raw(_big("f0"))
        assert busy.wait(5), "the first report reached the handler"
        for i in range(1, 10):
            flood.send_raw(_big(f"f{i}"))  # three wait, six are refused

        def counted() -> float:
            received = sample(metrics, "lc_messages_received_total", kind="dataset")
            refused = sample(metrics, "lc_messages_rejected_total", reason="handler_backlog")
            return received + refused

        wait_until(lambda: counted() == 10, what="the flood handled or refused")
        assert sample(metrics, "lc_messages_rejected_total", reason="handler_backlog") == 6
        quiet.send_status("dataset", "ns", "q", {"n": 1})
        wait_until(lambda: counted() == 11, what="the quiet node's report")
        # taken, in place of the flood's oldest waiting report
        assert sample(metrics, "lc_messages_rejected_total", reason="handler_backlog") == 6
        assert sample(metrics, "lc_reports_dropped_total", kind="dataset") == 1
        (kind,) = layer._dispatcher._kinds.values()
        assert sum(q.bytes for q in kind.queues) <= 3 * size + small // 2
        # the flood's frames are judged as before: a malformed one is still refused
        flood.send_raw("{not json")
        wait_until(
            lambda: sample(metrics, "lc_messages_rejected_total", reason="invalid_json") == 1,
            what="the malformed frame refused",
        )
    finally:
        release.set()
    wait_until(lambda: len(got) == 4, what="what was taken handled")
    assert ("quiet", "q") in got and ("flood", "f1") not in got


def test_a_node_filling_the_unrouted_bound_cannot_keep_anothers_early_report_out(
    make_layer: LayerFactory, metrics: Metrics
) -> None:
    """ws_pending_starve: one node filled maxUnroutedReportBytes; every other node's report
    ahead of its route was refused not_routed."""
    got: list[tuple[str, str]] = []
    size = len(_big("f0"))
    layer = make_layer(authorizeReports=True, maxUnroutedReportBytes=4 * size)
    layer.register_upstream("dataset", lambda m: got.append((m.node_name, m.name)))
    flood, early = FakeLC(layer.port, "flood"), FakeLC(layer.port, "early")
    for i in range(6):
        flood.send_raw(_big(f"f{i}"))
    wait_until(
        lambda: sample(metrics, "lc_messages_rejected_total", reason="not_routed") == 2,
        what="the flood held up to the bound and refused beyond it",
    )
    assert layer._pending.held_by("flood") == 4
    early.send_status("dataset", "ns", "e", {"n": 1})
    wait_until(lambda: layer._pending.held_by("early") == 1, what="the early report held")
    assert layer._pending.held_by("flood") == 3  # its oldest gave way
    assert layer._pending.held_bytes <= 4 * size
    layer.send("early", "insert", obj("Dataset", "e", "ns"))
    wait_until(lambda: got == [("early", "e")], what="the early report once routed")
    assert sample(metrics, "lc_messages_rejected_total", reason="not_routed") == 3
    flood.close()
    early.close()
