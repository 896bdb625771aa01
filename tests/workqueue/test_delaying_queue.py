"""client-go's delaying_queue_test.go, ported to virtual time."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from sedna.runtime.clock import FakeClock
from sedna.runtime.workqueue import MAX_WAIT, DelayingQueue

from .helpers import wait_until


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def q(clock: FakeClock) -> Iterator[DelayingQueue[str]]:
    queue: DelayingQueue[str] = DelayingQueue(clock=clock)
    # The waiting loop is idle on its heartbeat: the barrier every test starts from.
    assert clock.block_until_waiters(1)
    yield queue
    queue.shut_down()


def wait_for_added(q: DelayingQueue[str], depth: int) -> bool:
    return wait_until(lambda: len(q) == depth)


def test_simple_queue(clock: FakeClock, q: DelayingQueue[str]) -> None:
    q.add_after("foo", 0.05)
    assert q.num_waiting() == 1
    assert len(q) == 0

    clock.step(0.06)
    assert wait_for_added(q, 1)
    item, _ = q.get()
    assert item == "foo"
    q.done("foo")

    # Step past the next heartbeat: nothing else appears.
    clock.step(MAX_WAIT)
    assert clock.block_until_waiters(1)
    assert q.wait_idle(5)
    assert len(q) == 0
    assert q.num_waiting() == 0


def test_deduping(clock: FakeClock, q: DelayingQueue[str]) -> None:
    q.add_after("foo", 0.05)
    q.add_after("foo", 0.07)
    assert q.num_waiting() == 1
    assert len(q) == 0

    # Step past the first block: the earlier time is kept.
    clock.step(0.06)
    assert wait_for_added(q, 1)
    assert q.get() == ("foo", False)
    q.done("foo")

    # Step past the second add: nothing, it was merged into the first.
    clock.step(0.02)
    assert q.wait_idle(5)
    assert len(q) == 0

    # Again, but this time the later add is earlier and overrides.
    q.add_after("foo", 0.05)
    q.add_after("foo", 0.03)
    assert q.num_waiting() == 1
    assert len(q) == 0
    clock.step(0.04)
    assert wait_for_added(q, 1)
    assert q.get() == ("foo", False)
    q.done("foo")

    clock.step(0.02)
    assert q.wait_idle(5)
    assert len(q) == 0
    assert q.num_waiting() == 0


def test_add_two_fire_early(clock: FakeClock, q: DelayingQueue[str]) -> None:
    q.add_after("foo", 1.0)
    q.add_after("bar", 0.05)
    assert len(q) == 0

    clock.step(0.06)
    assert wait_for_added(q, 1)
    item, _ = q.get()
    assert item == "bar"

    q.add_after("baz", 2.0)
    clock.step(1.0)
    assert wait_for_added(q, 1)
    item, _ = q.get()
    assert item == "foo"

    clock.step(2.0)
    assert wait_for_added(q, 1)
    item, _ = q.get()
    assert item == "baz"


def test_copy_shifting(clock: FakeClock, q: DelayingQueue[str]) -> None:
    q.add_after("foo", 1.0)
    q.add_after("bar", 0.5)
    q.add_after("baz", 0.25)
    assert len(q) == 0

    clock.step(2.0)
    assert wait_for_added(q, 3)
    assert [q.get()[0] for _ in range(3)] == ["baz", "bar", "foo"]


def test_not_ready_until_exactly_due(clock: FakeClock, q: DelayingQueue[str]) -> None:
    q.add_after("foo", 10.0)
    clock.step(9.999)
    assert q.wait_idle(5)
    assert len(q) == 0
    clock.step(0.001)
    assert wait_for_added(q, 1)


def test_non_positive_delay_adds_at_once(clock: FakeClock, q: DelayingQueue[str]) -> None:
    q.add_after("now", 0)
    q.add_after("past", -3)
    assert len(q) == 2
    assert q.num_waiting() == 0


def test_waiting_item_is_added_even_if_already_queued(
    clock: FakeClock, q: DelayingQueue[str]
) -> None:
    q.add("foo")
    q.add_after("foo", 1.0)
    assert q.get() == ("foo", False)
    q.done("foo")
    clock.step(1.0)
    assert wait_for_added(q, 1)


def test_many_random_delays_come_out_in_order(clock: FakeClock, q: DelayingQueue[str]) -> None:
    rng = random.Random(7)
    delays = {f"k{i}": rng.uniform(0.001, 600) for i in range(300)}
    for key, delay in delays.items():
        q.add_after(key, delay)
    assert q.num_waiting() == 300
    clock.step(660)
    assert wait_for_added(q, 300)
    got = [q.get()[0] for _ in range(300)]
    assert got == sorted(delays, key=lambda k: delays[k])


def test_shut_down_stops_the_loop_and_drops_waiting(clock: FakeClock) -> None:
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    assert clock.block_until_waiters(1)
    q.add_after("foo", 1.0)
    q.shut_down()
    assert not q._loop.is_alive()
    assert not clock.has_waiters()
    q.add_after("bar", 1.0)
    assert q.num_waiting() == 0
    clock.step(5)
    assert len(q) == 0
    assert q.get() == (None, True)


def test_shut_down_with_drain_stops_the_loop(clock: FakeClock) -> None:
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    assert clock.block_until_waiters(1)
    q.add_after("foo", 1.0)
    q.shut_down_with_drain()
    assert not q._loop.is_alive()
    assert not clock.has_waiters()


def test_wait_idle_covers_due_items_not_yet_moved(clock: FakeClock, q: DelayingQueue[str]) -> None:
    q.add_after("foo", 1.0)
    assert q.wait_idle(1)  # not due: idle
    clock.step(1.0)
    assert not q.wait_idle(0.05)  # due, then queued, nobody takes it
    assert len(q) == 1
