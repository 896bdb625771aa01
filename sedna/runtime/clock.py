"""Injectable time, so that every delay in the GM can be tested in virtual time.

Everything in the project that reads the time, sleeps or waits with a timeout
takes a `Clock`. Production code gets `RealClock`; tests pass a `FakeClock`
and move time forward explicitly with `FakeClock.step`, the way client-go's
tests use `k8s.io/utils/clock/testing.FakeClock`. A backoff of 360 s is then
tested in microseconds, and tests never depend on how fast the machine is.

Waiting on a `threading.Condition` is the primitive the rest builds on: the
caller holds the condition's lock and wants to be woken either by a notify
from another thread or when a deadline *on this clock* passes. With a
`FakeClock` the deadline passes only when some thread calls `step`/`set`.

Two forms exist. `condition_wait(cond, timeout)` measures the timeout from the
moment of the call, like `Condition.wait`. `condition_wait_until(cond,
deadline)` takes an absolute deadline on `now()`; loops that compute "the next
thing is due at t" must use it, because with a relative timeout a `step` that
lands between the loop's `now()` and its wait would be lost (the fake clock
checks the absolute deadline and registers the waiter atomically).

One difference from client-go's FakeClock, on purpose: `FakeClock.sleep`
blocks until another thread steps past the deadline (client-go's advances the
clock itself). A sleeping worker thread then behaves like a sleeping worker
thread, and the test decides when time moves.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "FakeClock", "RealClock"]


@runtime_checkable
class Clock(Protocol):
    """The time source every waiting or sleeping part of the project takes."""

    def now(self) -> float:
        """Monotonic seconds; only differences are meaningful."""
        ...

    def wall(self) -> datetime:
        """Timezone-aware UTC wall time, for timestamps written to the API."""
        ...

    def sleep(self, seconds: float) -> None:
        """Block the calling thread for `seconds` of this clock's time."""
        ...

    def condition_wait(self, cond: threading.Condition, timeout: float | None) -> None:
        """Wait on `cond` (lock held) until notified or `timeout` of clock time passed.

        May return early (spurious wake-up), as `Condition.wait`; callers loop on
        their predicate. `timeout=None` waits for a notify only.
        """
        ...

    def condition_wait_until(self, cond: threading.Condition, deadline: float) -> None:
        """Wait on `cond` (lock held) until notified or `now() >= deadline`.

        Returns at once when the deadline has already passed. Use this form in
        loops that compute their next due time from `now()`.
        """
        ...


class RealClock:
    """The process's clocks: `time.monotonic` and UTC wall time."""

    def now(self) -> float:
        return time.monotonic()

    def wall(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def condition_wait(self, cond: threading.Condition, timeout: float | None) -> None:
        if timeout is None:
            cond.wait()
        elif timeout > 0:
            cond.wait(timeout)

    def condition_wait_until(self, cond: threading.Condition, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining > 0:
            cond.wait(remaining)


@dataclass(eq=False)
class _Waiter:
    """One blocked thread: a sleeper (event) or a condition waiter (cond)."""

    deadline: float
    cond: threading.Condition | None = None
    event: threading.Event = field(default_factory=threading.Event)

    def fire(self) -> None:
        if self.cond is not None:
            # Taking the lock is what makes the wake-up reliable: the waiter held it
            # from registration until `cond.wait` released it.
            with self.cond:
                self.cond.notify_all()
        else:
            self.event.set()


class FakeClock:
    """Virtual time for tests; advances only by `step` or `set`.

    Thread-safe. Waiters whose deadline is reached by a `step` are woken by
    that call, after the clock's own lock is released (so a woken thread may
    read the clock at once). Never call `step` from a thread that holds the
    lock of a condition someone waits on with this clock.
    """

    def __init__(self, start: float = 0.0, wall_start: datetime | None = None) -> None:
        if wall_start is None:
            wall_start = datetime.now(UTC)
        if wall_start.tzinfo is None:
            raise ValueError("wall_start must be timezone-aware")
        self._lock = threading.Lock()
        # Notified whenever a waiter registers, for block_until_waiters.
        self._registered = threading.Condition(self._lock)
        self._start = start
        self._now = start
        self._wall_start = wall_start.astimezone(UTC)
        self._waiters: list[_Waiter] = []

    # -- Clock -------------------------------------------------------------

    def now(self) -> float:
        with self._lock:
            return self._now

    def wall(self) -> datetime:
        with self._lock:
            return self._wall_start + timedelta(seconds=self._now - self._start)

    def sleep(self, seconds: float) -> None:
        with self._lock:
            if seconds <= 0:
                return
            waiter = _Waiter(self._now + seconds)
            self._register(waiter)
        waiter.event.wait()

    def condition_wait(self, cond: threading.Condition, timeout: float | None) -> None:
        with self._lock:
            if timeout is not None and timeout <= 0:
                return
            deadline = math.inf if timeout is None else self._now + timeout
            waiter = _Waiter(deadline, cond)
            self._register(waiter)
        self._wait_on(cond, waiter)

    def condition_wait_until(self, cond: threading.Condition, deadline: float) -> None:
        with self._lock:
            if deadline <= self._now:
                return
            waiter = _Waiter(deadline, cond)
            self._register(waiter)
        self._wait_on(cond, waiter)

    # -- test controls -----------------------------------------------------

    def step(self, seconds: float) -> None:
        """Advance virtual time and wake every waiter whose deadline passed."""
        if seconds < 0:
            raise ValueError("a monotonic clock cannot step backwards")
        with self._lock:
            self._now += seconds
            fired = self._take_due()
        for waiter in fired:
            waiter.fire()

    def set(self, now: float) -> None:
        """Move virtual time to `now` (not backwards) and wake due waiters."""
        with self._lock:
            if now < self._now:
                raise ValueError("a monotonic clock cannot go backwards")
            self._now = now
            fired = self._take_due()
        for waiter in fired:
            waiter.fire()

    def has_waiters(self) -> bool:
        """Whether any thread is blocked on this clock with a finite deadline."""
        with self._lock:
            return any(w.deadline != math.inf for w in self._waiters)

    def waiter_count(self) -> int:
        """Threads blocked on this clock with a finite deadline."""
        with self._lock:
            return sum(1 for w in self._waiters if w.deadline != math.inf)

    def block_until_waiters(self, count: int = 1, timeout: float = 5.0) -> bool:
        """Block (real time) until at least `count` timed waiters are registered.

        The barrier tests need before a `step`: "the loop under test has
        reached its wait". Returns False on the real-time timeout.
        """
        end = time.monotonic() + timeout
        with self._lock:
            while sum(1 for w in self._waiters if w.deadline != math.inf) < count:
                remaining = end - time.monotonic()
                if remaining <= 0:
                    return False
                self._registered.wait(remaining)
            return True

    # -- internals ---------------------------------------------------------

    def _register(self, waiter: _Waiter) -> None:
        self._waiters.append(waiter)
        self._registered.notify_all()

    def _take_due(self) -> list[_Waiter]:
        due = [w for w in self._waiters if w.deadline <= self._now]
        if due:
            self._waiters = [w for w in self._waiters if w.deadline > self._now]
        return due

    def _wait_on(self, cond: threading.Condition, waiter: _Waiter) -> None:
        try:
            cond.wait()
        finally:
            # Woken by someone else's notify: the registration is stale.
            with self._lock:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
