"""A delaying queue whose retries back off per item (client-go's `rateLimitingType`).

`add_rate_limited` asks the rate limiter how long this item should wait and
hands it to `add_after`; `forget` resets the item's backoff once a sync
succeeded. Forgetting does not remove a pending retry: it only means the next
failure starts from the base delay again. The default limiter is Sedna's
exponential backoff, 10 s doubling to 360 s.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TypeVar

from sedna.runtime.clock import Clock
from sedna.runtime.workqueue.delaying import DelayingQueue
from sedna.runtime.workqueue.metrics import WorkqueueMetricsProvider
from sedna.runtime.workqueue.rate_limiters import ItemExponentialFailureRateLimiter, RateLimiter

__all__ = ["RateLimitingQueue"]

T = TypeVar("T", bound=Hashable)


class RateLimitingQueue(DelayingQueue[T]):
    """The queue a controller owns: dedup, delays and per-item backoff."""

    def __init__(
        self,
        name: str,
        *,
        rate_limiter: RateLimiter[T] | None = None,
        clock: Clock | None = None,
        metrics: WorkqueueMetricsProvider | None = None,
    ) -> None:
        self.rate_limiter: RateLimiter[T] = (
            rate_limiter if rate_limiter is not None else ItemExponentialFailureRateLimiter()
        )
        super().__init__(name, clock=clock, metrics=metrics)

    def add_rate_limited(self, item: T) -> None:
        """Add `item` after the delay the rate limiter decides (counts a failure)."""
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Stop tracking `item`'s failures; its next backoff starts from the base."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        """How many times `item` was rate-limited since it was last forgotten."""
        return self.rate_limiter.num_requeues(item)
