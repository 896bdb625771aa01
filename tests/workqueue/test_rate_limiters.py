"""client-go's default_rate_limiters_test.go, ported, plus the token bucket in virtual time."""

from __future__ import annotations

import math

import pytest

from sedna.runtime.clock import FakeClock
from sedna.runtime.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
)

MS = 0.001


def test_item_exponential_failure_rate_limiter() -> None:
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(MS, 1.0)
    assert [limiter.when("one") for _ in range(5)] == [MS, 2 * MS, 4 * MS, 8 * MS, 16 * MS]
    assert limiter.num_requeues("one") == 5
    assert limiter.when("two") == MS
    assert limiter.when("two") == 2 * MS
    assert limiter.num_requeues("two") == 2
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == MS


def test_item_exponential_failure_rate_limiter_overflow() -> None:
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(MS, 1000.0)
    for _ in range(5):
        limiter.when("one")
    assert limiter.when("one") == 32 * MS
    for _ in range(1000):
        limiter.when("overflow1")
    assert limiter.when("overflow1") == 1000.0

    limiter = ItemExponentialFailureRateLimiter(60.0, 1000 * 3600.0)
    for _ in range(2):
        limiter.when("two")
    assert limiter.when("two") == 240.0
    for _ in range(1000):
        limiter.when("overflow2")
    assert limiter.when("overflow2") == 1000 * 3600.0
    for _ in range(2000):
        limiter.when("overflow3")  # past float range: still the cap, no OverflowError
    assert limiter.when("overflow3") == 1000 * 3600.0


def test_sedna_defaults() -> None:
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter()
    assert (limiter.base, limiter.max) == (10.0, 360.0)
    assert [limiter.when("k") for _ in range(7)] == [10, 20, 40, 80, 160, 320, 360]


def test_negative_delays_are_rejected() -> None:
    with pytest.raises(ValueError):
        ItemExponentialFailureRateLimiter(-1.0, 1.0)


def test_item_fast_slow_rate_limiter() -> None:
    limiter: ItemFastSlowRateLimiter[str] = ItemFastSlowRateLimiter(5 * MS, 10.0, 3)
    assert [limiter.when("one") for _ in range(5)] == [5 * MS, 5 * MS, 5 * MS, 10.0, 10.0]
    assert limiter.num_requeues("one") == 5
    assert limiter.when("two") == 5 * MS
    assert limiter.when("two") == 5 * MS
    assert limiter.num_requeues("two") == 2
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == 5 * MS


def test_max_of_rate_limiter() -> None:
    limiter: MaxOfRateLimiter[str] = MaxOfRateLimiter(
        ItemFastSlowRateLimiter(5 * MS, 3.0, 3),
        ItemExponentialFailureRateLimiter(MS, 1.0),
    )
    assert [limiter.when("one") for _ in range(5)] == [5 * MS, 5 * MS, 5 * MS, 3.0, 3.0]
    assert limiter.num_requeues("one") == 5
    assert limiter.when("two") == 5 * MS
    assert limiter.when("two") == 5 * MS
    assert limiter.num_requeues("two") == 2
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == 5 * MS


class StepRateLimiter:
    """base delay for the first `threshold` calls (any item), then max delay."""

    def __init__(self, base: float, maximum: float, threshold: int) -> None:
        self.count = 0
        self.base, self.maximum, self.threshold = base, maximum, threshold

    def when(self, item: int) -> float:
        self.count += 1
        return self.base if self.count <= self.threshold else self.maximum

    def num_requeues(self, item: int) -> int:
        return 0

    def forget(self, item: int) -> None:
        pass


def test_with_max_wait_rate_limiter() -> None:
    limiter: WithMaxWaitRateLimiter[int] = WithMaxWaitRateLimiter(
        StepRateLimiter(5 * MS, 1000.0, 100), 500.0
    )
    assert all(limiter.when(i) == 5 * MS for i in range(100))
    assert all(limiter.when(i) == 500.0 for i in range(100, 200))


def test_bucket_rate_limiter_burst_then_qps() -> None:
    clock = FakeClock()
    limiter: BucketRateLimiter[str] = BucketRateLimiter(10.0, 3, clock=clock)
    # The bucket starts full: a burst of 3 goes at once.
    assert [limiter.when("x") for _ in range(3)] == [0.0, 0.0, 0.0]
    # Then tokens are reserved in debt, 100 ms apart.
    assert limiter.when("x") == pytest.approx(0.1)
    assert limiter.when("y") == pytest.approx(0.2)
    clock.step(0.2)
    assert limiter.when("x") == pytest.approx(0.1)
    clock.step(10)  # refills, but never past the burst
    assert [limiter.when("x") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.when("x") == pytest.approx(0.1)
    assert limiter.num_requeues("x") == 0
    limiter.forget("x")


def test_bucket_rate_limiter_arguments() -> None:
    unlimited: BucketRateLimiter[str] = BucketRateLimiter(math.inf, 1)
    assert unlimited.when("x") == 0.0
    with pytest.raises(ValueError):
        BucketRateLimiter(0, 1)
    with pytest.raises(ValueError):
        BucketRateLimiter(1, 0)


def test_default_controller_rate_limiter() -> None:
    clock = FakeClock()
    limiter: MaxOfRateLimiter[str] = default_controller_rate_limiter(clock)
    assert limiter.when("a") == pytest.approx(0.005)
    assert limiter.when("a") == pytest.approx(0.010)
    assert limiter.num_requeues("a") == 2
    # 100 distinct items exhaust the burst; the 101st waits for a token.
    for i in range(98):
        limiter.when(f"k{i}")
    assert limiter.when("b") == pytest.approx(0.1)
