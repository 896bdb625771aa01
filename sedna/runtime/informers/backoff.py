"""Reconnect backoff for list/watch, as client-go's reflector uses.

client-go: 800 ms initial, doubling to 30 s, reset after 2 minutes without a
failure, with jitter so that many informers (or many GMs) restarted by the same
API server outage do not reconnect in lockstep.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..clock import Clock

__all__ = ["Backoff", "BackoffPolicy"]


@dataclass(frozen=True)
class BackoffPolicy:
    """Parameters; ``jitter`` adds up to that fraction of the delay at random."""

    initial: float = 0.8
    maximum: float = 30.0
    factor: float = 2.0
    jitter: float = 0.2
    reset_after: float = 120.0


class Backoff:
    """Delays for consecutive failures; healthy time since the last failure resets it."""

    def __init__(
        self, clock: Clock, policy: BackoffPolicy | None = None, rng: random.Random | None = None
    ) -> None:
        self.clock = clock
        self.policy = policy or BackoffPolicy()
        self._rng = rng or random.Random()
        self._step = 0
        self._last_failure: float | None = None

    def next_delay(self) -> float:
        """Record a failure and return how long to wait before retrying."""
        p = self.policy
        now = self.clock.now()
        if self._last_failure is not None and now - self._last_failure >= p.reset_after:
            self._step = 0
        self._last_failure = now
        base = min(p.maximum, p.initial * (p.factor**self._step))
        if base < p.maximum:
            self._step += 1
        return base + base * p.jitter * self._rng.random()

    def reset(self) -> None:
        """Forget past failures (after a healthy stretch of operation)."""
        self._step = 0
        self._last_failure = None

    @property
    def failures(self) -> int:
        """Consecutive failures counted since the last reset (capped at the max step)."""
        return self._step
