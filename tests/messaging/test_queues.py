"""NodeQueue: coalescing per key, bounded, requeue after a failed write."""

from __future__ import annotations

from collections import OrderedDict

from hypothesis import given
from hypothesis import strategies as st

from sedna.runtime.messaging.queues import NodeQueue, Outgoing
from sedna.runtime.messaging.wire import Header


def msg(name: str, version: int = 0) -> Outgoing:
    return Outgoing(Header("ns", "model", name, "insert"), frame=f"{name}@{version}")


def drain(q: NodeQueue) -> list[str]:
    out = []
    while (m := q.pop_or_arm(lambda: None)) is not None:
        out.append(m.frame)
    return out


def test_newer_message_takes_the_older_ones_place() -> None:
    q = NodeQueue("n", 10)
    q.put(msg("a", 1))
    q.put(msg("b", 1))
    q.put(msg("a", 2))
    assert drain(q) == ["a@2", "b@1"]


def test_bound_drops_oldest() -> None:
    q = NodeQueue("n", 2)
    assert q.put(msg("a")) is None
    assert q.put(msg("b")) is None
    dropped = q.put(msg("c"))
    assert dropped is not None and dropped.frame == "a@0"
    # Replacing a waiting key at the bound drops nothing.
    assert q.put(msg("b", 1)) is None
    assert drain(q) == ["b@1", "c@0"]


def test_requeue_goes_to_the_front_unless_superseded() -> None:
    q = NodeQueue("n", 10)
    q.put(msg("a"))
    q.put(msg("b"))
    first = q.pop_or_arm(lambda: None)
    assert first is not None
    assert q.requeue(first) is None
    assert q.keys() == ["model/ns/a", "model/ns/b"]
    first = q.pop_or_arm(lambda: None)
    assert first is not None
    q.put(msg("a", 1))  # newer while the old one was in flight
    q.requeue(first)
    assert drain(q) == ["b@0", "a@1"]


def test_requeue_at_the_bound_drops_the_oldest() -> None:
    q = NodeQueue("n", 2)
    q.put(msg("a"))
    inflight = q.pop_or_arm(lambda: None)
    assert inflight is not None
    q.put(msg("b"))
    q.put(msg("c"))
    dropped = q.requeue(inflight)
    assert dropped is inflight
    assert drain(q) == ["b@0", "c@0"]


def test_waker_fires_once_on_the_next_put_and_can_be_disarmed() -> None:
    q = NodeQueue("n", 10)
    woken: list[int] = []

    def waker() -> None:
        woken.append(1)

    assert q.pop_or_arm(waker) is None
    q.put(msg("a"))
    q.put(msg("b"))
    assert woken == [1]
    drain(q)
    assert q.pop_or_arm(waker) is None
    q.disarm(waker)
    q.put(msg("c"))
    assert woken == [1]


class _Gauge:
    def __init__(self) -> None:
        self.value = -1.0

    def set(self, value: float) -> None:
        self.value = value


def test_depth_gauge_follows_the_queue() -> None:
    g = _Gauge()
    q = NodeQueue("n", 5, g)
    q.put(msg("a"))
    q.put(msg("b"))
    assert g.value == 2
    q.pop_or_arm(lambda: None)
    assert g.value == 1
    q.clear()
    assert g.value == 0


ops = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.sampled_from("abcdef"), st.integers(0, 9)),
        st.tuples(st.just("pop"), st.just(""), st.just(0)),
    ),
    max_size=60,
)


@given(ops, st.integers(1, 4))
def test_matches_a_reference_model(operations: list[tuple[str, str, int]], bound: int) -> None:
    """Against an OrderedDict model: latest value per key, first-come order, oldest dropped."""
    q = NodeQueue("n", bound)
    model: OrderedDict[str, str] = OrderedDict()
    for op, key, version in operations:
        if op == "put":
            dropped = q.put(msg(key, version))
            expected_drop = None
            if key not in model and len(model) >= bound:
                _, expected_drop = model.popitem(last=False)
            model[key] = f"{key}@{version}"
            assert (dropped.frame if dropped else None) == expected_drop
        else:
            got = q.pop_or_arm(lambda: None)
            want = model.popitem(last=False)[1] if model else None
            assert (got.frame if got else None) == want
        assert len(q) == len(model) <= bound
