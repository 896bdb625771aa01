"""How long a failing item waits before its next try (client-go's `default_rate_limiters.go`).

A rate limiter answers `when(item)` (the delay for this retry, counting it),
`forget(item)` (the item succeeded: reset its history) and
`num_requeues(item)`. Delays are float seconds.

Sedna's controllers use `ItemExponentialFailureRateLimiter(10 s, 360 s)`
(`runtime.DefaultBackOff` / `MaxBackOff`), so those are the defaults here; the
others are for features that want client-go's behaviour.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar

from sedna.runtime.clock import Clock, RealClock

__all__ = [
    "DEFAULT_BACKOFF",
    "MAX_BACKOFF",
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "WithMaxWaitRateLimiter",
    "default_controller_rate_limiter",
]

T = TypeVar("T", bound=Hashable)
T_contra = TypeVar("T_contra", bound=Hashable, contravariant=True)

DEFAULT_BACKOFF = 10.0
"""Sedna's runtime.DefaultBackOff, seconds."""
MAX_BACKOFF = 360.0
"""Sedna's runtime.MaxBackOff, seconds."""


class RateLimiter(Protocol[T_contra]):
    def when(self, item: T_contra) -> float:
        """Delay in seconds before `item` is retried; records one more failure."""
        ...

    def forget(self, item: T_contra) -> None:
        """Drop the item's failure history (it succeeded or was deleted)."""
        ...

    def num_requeues(self, item: T_contra) -> int:
        """Failures recorded for `item` since it was last forgotten."""
        ...


class ItemExponentialFailureRateLimiter(Generic[T]):
    """`base * 2**failures`, capped at `max`; per item."""

    def __init__(self, base: float = DEFAULT_BACKOFF, max: float = MAX_BACKOFF) -> None:
        if base < 0 or max < 0:
            raise ValueError("delays must be non-negative")
        self.base = base
        self.max = max
        self._lock = threading.Lock()
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        with self._lock:
            exp = self._failures.get(item, 0)
            self._failures[item] = exp + 1
        try:
            backoff = math.ldexp(self.base, exp)
        except OverflowError:  # past float range; the cap was passed long before
            return self.max
        return self.max if backoff > self.max else backoff

    def num_requeues(self, item: T) -> int:
        with self._lock:
            return self._failures.get(item, 0)

    def forget(self, item: T) -> None:
        with self._lock:
            self._failures.pop(item, None)


class ItemFastSlowRateLimiter(Generic[T]):
    """`fast_delay` for the first `max_fast_attempts` failures, then `slow_delay`."""

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        self.fast_delay = fast_delay
        self.slow_delay = slow_delay
        self.max_fast_attempts = max_fast_attempts
        self._lock = threading.Lock()
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        with self._lock:
            failures = self._failures.get(item, 0) + 1
            self._failures[item] = failures
        return self.fast_delay if failures <= self.max_fast_attempts else self.slow_delay

    def num_requeues(self, item: T) -> int:
        with self._lock:
            return self._failures.get(item, 0)

    def forget(self, item: T) -> None:
        with self._lock:
            self._failures.pop(item, None)


class BucketRateLimiter(Generic[T]):
    """A token bucket over all items: `qps` sustained, `burst` at once.

    Same reservation rule as golang.org/x/time/rate's `Reserve().Delay()`: the
    bucket starts full, every `when` takes a token even if it has to go into
    debt, and the delay is the time until that token exists. Time comes from
    the clock, so tests drive it with a `FakeClock`. Not per item, so `forget`
    does nothing and `num_requeues` is always 0.
    """

    def __init__(self, qps: float, burst: int, *, clock: Clock | None = None) -> None:
        if qps <= 0:
            raise ValueError("qps must be positive (use math.inf for no limit)")
        if burst < 1:
            raise ValueError("burst must be at least 1")
        self.qps = qps
        self.burst = burst
        self._clock: Clock = clock if clock is not None else RealClock()
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._last = self._clock.now()

    def when(self, item: T) -> float:
        if math.isinf(self.qps):
            return 0.0
        with self._lock:
            now = self._clock.now()
            last = min(self._last, now)
            tokens = min(float(self.burst), self._tokens + (now - last) * self.qps)
            tokens -= 1.0
            self._tokens = tokens
            self._last = now
        return -tokens / self.qps if tokens < 0 else 0.0

    def num_requeues(self, item: T) -> int:
        return 0

    def forget(self, item: T) -> None:
        pass


class MaxOfRateLimiter(Generic[T]):
    """The longest delay of several limiters (each one counts the failure)."""

    def __init__(self, *limiters: RateLimiter[T]) -> None:
        self.limiters = limiters

    def when(self, item: T) -> float:
        delay = 0.0
        for limiter in self.limiters:
            delay = max(delay, limiter.when(item))
        return delay

    def num_requeues(self, item: T) -> int:
        return max((limiter.num_requeues(item) for limiter in self.limiters), default=0)

    def forget(self, item: T) -> None:
        for limiter in self.limiters:
            limiter.forget(item)


class WithMaxWaitRateLimiter(Generic[T]):
    """Caps another limiter's delay at `max_delay`."""

    def __init__(self, limiter: RateLimiter[T], max_delay: float) -> None:
        self.limiter = limiter
        self.max_delay = max_delay

    def when(self, item: T) -> float:
        return min(self.limiter.when(item), self.max_delay)

    def num_requeues(self, item: T) -> int:
        return self.limiter.num_requeues(item)

    def forget(self, item: T) -> None:
        self.limiter.forget(item)


def default_controller_rate_limiter(clock: Clock | None = None) -> MaxOfRateLimiter[T]:
    """client-go's DefaultControllerRateLimiter: 5 ms..1000 s per item, 10 qps/100 burst."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(10.0, 100, clock=clock),
    )
