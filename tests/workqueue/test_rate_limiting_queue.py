"""client-go's rate_limiting_queue_test.go, ported, plus Sedna's default backoff."""

from __future__ import annotations

import pytest

from sedna.runtime.clock import FakeClock
from sedna.runtime.workqueue import (
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    RateLimitingQueue,
)

from .helpers import wait_until


def ready_in(q: RateLimitingQueue[str], clock: FakeClock, item: str) -> float:
    """Seconds until `item` leaves the waiting heap (private look, as client-go's test)."""
    return q._waiting[item].ready_at - clock.now()


def test_rate_limiting_queue() -> None:
    clock = FakeClock()
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(0.001, 1.0)
    q: RateLimitingQueue[str] = RateLimitingQueue("", rate_limiter=limiter, clock=clock)
    try:
        q.add_rate_limited("one")
        assert ready_in(q, clock, "one") == pytest.approx(0.001)
        q.add_rate_limited("one")  # 2 ms, but the earlier ready time is kept
        assert ready_in(q, clock, "one") == pytest.approx(0.001)
        assert q.num_requeues("one") == 2

        q.add_rate_limited("two")
        assert ready_in(q, clock, "two") == pytest.approx(0.001)
        q.add_rate_limited("two")
        assert q.num_requeues("two") == 2

        q.forget("one")
        assert q.num_requeues("one") == 0
        clock.step(0.001)
        assert wait_until(lambda: len(q) == 2)
        q.add_rate_limited("one")
        assert ready_in(q, clock, "one") == pytest.approx(0.001)
    finally:
        q.shut_down()


def test_sedna_default_backoff_is_10s_doubling_to_360s() -> None:
    clock = FakeClock()
    q: RateLimitingQueue[str] = RateLimitingQueue("jobs", clock=clock)
    try:
        assert clock.block_until_waiters(1)
        expected = [10, 20, 40, 80, 160, 320, 360, 360]
        for n, delay in enumerate(expected, start=1):
            q.add_rate_limited("ns/job")
            assert q.num_requeues("ns/job") == n
            # Not there a hair before the delay, there right at it.
            clock.step(delay - 0.001)
            assert q.wait_idle(5)
            assert len(q) == 0
            clock.step(0.001)
            assert wait_until(lambda: len(q) == 1)
            item, _ = q.get()
            assert item == "ns/job"
            q.done("ns/job")
        q.forget("ns/job")
        assert q.num_requeues("ns/job") == 0
        q.add_rate_limited("ns/job")
        assert ready_in(q, clock, "ns/job") == pytest.approx(10)
    finally:
        q.shut_down()


def test_forget_keeps_a_pending_retry() -> None:
    clock = FakeClock()
    q: RateLimitingQueue[str] = RateLimitingQueue(
        "", rate_limiter=ItemFastSlowRateLimiter(1.0, 5.0, 1), clock=clock
    )
    try:
        q.add_rate_limited("a")
        q.forget("a")
        assert q.num_waiting() == 1
        clock.step(1.0)
        assert wait_until(lambda: len(q) == 1)
    finally:
        q.shut_down()


def test_add_rate_limited_after_shutdown_is_ignored() -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue("", clock=FakeClock())
    q.shut_down()
    q.add_rate_limited("a")
    assert q.num_waiting() == 0
    assert len(q) == 0
