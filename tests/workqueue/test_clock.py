"""FakeClock semantics the workqueue and every other waiter rely on."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from sedna.runtime.clock import Clock, FakeClock, RealClock

from .helpers import wait_until


def test_both_clocks_satisfy_the_protocol() -> None:
    assert isinstance(RealClock(), Clock)
    assert isinstance(FakeClock(), Clock)


def test_real_clock_basics() -> None:
    clock = RealClock()
    a = clock.now()
    clock.sleep(0)
    clock.sleep(-1)
    assert clock.now() >= a
    assert clock.wall().tzinfo is UTC
    cond = threading.Condition()
    with cond:
        clock.condition_wait(cond, 0.001)
        clock.condition_wait(cond, 0)
        clock.condition_wait_until(cond, clock.now() - 1)


def test_fake_clock_time_moves_only_by_step_and_set() -> None:
    start = datetime(2024, 1, 1, tzinfo=UTC)
    clock = FakeClock(100.0, wall_start=start)
    assert clock.now() == 100.0
    assert clock.wall() == start
    clock.step(2.5)
    assert clock.now() == 102.5
    assert clock.wall() == start + timedelta(seconds=2.5)
    clock.set(110.0)
    assert clock.now() == 110.0
    with pytest.raises(ValueError):
        clock.set(109.0)
    with pytest.raises(ValueError):
        clock.step(-1)
    with pytest.raises(ValueError):
        FakeClock(wall_start=datetime(2024, 1, 1))  # naive


def test_fake_sleep_blocks_until_stepped_past_deadline() -> None:
    clock = FakeClock()
    woke = threading.Event()

    def sleeper() -> None:
        clock.sleep(10)
        woke.set()

    t = threading.Thread(target=sleeper)
    t.start()
    assert clock.block_until_waiters(1)
    assert clock.has_waiters()
    clock.step(9.999)
    assert not woke.wait(0.02)
    clock.step(0.001)
    assert woke.wait(5)
    t.join()
    assert not clock.has_waiters()


def test_fake_sleep_of_zero_returns_at_once() -> None:
    clock = FakeClock()
    clock.sleep(0)
    clock.sleep(-5)
    assert not clock.has_waiters()


def test_condition_wait_times_out_on_step_and_wakes_on_notify() -> None:
    clock = FakeClock()
    cond = threading.Condition()
    returned: list[float] = []

    def waiter() -> None:
        with cond:
            clock.condition_wait(cond, 5.0)
            returned.append(clock.now())

    t = threading.Thread(target=waiter)
    t.start()
    assert clock.block_until_waiters(1)
    clock.step(5.0)
    t.join(5)
    assert returned == [5.0]

    # A notify from another thread ends the wait early and unregisters it.
    t = threading.Thread(target=waiter)
    t.start()
    assert clock.block_until_waiters(1)
    with cond:
        cond.notify_all()
    t.join(5)
    assert returned == [5.0, 5.0]
    assert clock.waiter_count() == 0


def test_condition_wait_until_past_deadline_returns_without_waiting() -> None:
    clock = FakeClock(10.0)
    cond = threading.Condition()
    with cond:
        clock.condition_wait_until(cond, 10.0)
        clock.condition_wait_until(cond, 3.0)
        clock.condition_wait(cond, 0)
    assert not clock.has_waiters()


def test_untimed_condition_wait_is_not_a_timed_waiter() -> None:
    clock = FakeClock()
    cond = threading.Condition()
    done = threading.Event()

    def waiter() -> None:
        with cond:
            clock.condition_wait(cond, None)
        done.set()

    t = threading.Thread(target=waiter)
    t.start()
    assert not clock.block_until_waiters(1, timeout=0.02)
    clock.step(1e9)
    assert not done.is_set()
    # Notify until it has really started waiting (it may not have reached wait yet).
    assert wait_until(lambda: _notify(cond) or done.is_set())
    t.join(5)


def _notify(cond: threading.Condition) -> bool:
    with cond:
        cond.notify_all()
    return False


def test_step_wakes_only_due_waiters() -> None:
    clock = FakeClock()
    woke: list[int] = []
    lock = threading.Lock()

    def sleeper(n: int) -> None:
        clock.sleep(n)
        with lock:
            woke.append(n)

    threads = [threading.Thread(target=sleeper, args=(n,)) for n in (1, 2, 3)]
    for t in threads:
        t.start()
    assert clock.block_until_waiters(3)
    clock.step(2)
    assert wait_until(lambda: sorted(woke) == [1, 2])
    assert clock.waiter_count() == 1
    clock.step(1)
    for t in threads:
        t.join(5)
    assert sorted(woke) == [1, 2, 3]
