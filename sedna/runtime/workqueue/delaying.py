"""A work queue that can add an item later (client-go's `delayingType`).

Backoff and "look again in 30 s" both end here. Pending items wait in a heap
ordered by ready time; one loop thread per queue moves them into the queue
when due. The loop waits on this queue's own condition through the clock
(`Clock.condition_wait_until`), so with a `FakeClock` nothing becomes ready
until the test steps time, and a step wakes the loop at once.

Semantics kept from client-go:
* `add_after` with a non-positive delay is a plain `add`.
* An item already waiting keeps the *earlier* of its two ready times (a
  short retry is not pushed back by a later long one, and vice versa).
* Each `add_after` before shutdown counts one retry in the metrics.
* The loop also wakes every `MAX_WAIT` seconds (client-go's heartbeat, there
  10 s; here a minute: every controller has a queue, and an idle GM woke once a
  second for them); it gives tests a timed waiter to synchronise on
  (`FakeClock.block_until_waiters`). Adds wake it at once, so nothing waits on it.

Differences, on purpose: `add_after` inserts into the heap directly instead
of through a buffered channel, so a pending item is visible as soon as the
call returns; and `shut_down_with_drain` stops the loop too (client-go's keeps
running until its next heartbeat). Items still waiting at shutdown are dropped.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from loguru import logger

from sedna.runtime.clock import Clock
from sedna.runtime.workqueue.metrics import RetryMetrics, WorkqueueMetricsProvider
from sedna.runtime.workqueue.queue import Queue

__all__ = ["MAX_WAIT", "DelayingQueue"]

T = TypeVar("T", bound=Hashable)

MAX_WAIT = 60.0
"""Longest the waiting loop sleeps without re-checking (client-go's maxWait)."""


@dataclass(eq=False)
class _Entry(Generic[T]):
    ready_at: float
    seq: int
    item: T
    valid: bool = True

    def __lt__(self, other: _Entry[T]) -> bool:
        return (self.ready_at, self.seq) < (other.ready_at, other.seq)


class DelayingQueue(Queue[T]):
    """`Queue` plus `add_after`; starts its waiting-loop thread on construction."""

    def __init__(
        self,
        name: str = "",
        *,
        clock: Clock | None = None,
        metrics: WorkqueueMetricsProvider | None = None,
    ) -> None:
        super().__init__(name, clock=clock, metrics=metrics)
        self._retry_metrics = RetryMetrics(metrics, name) if metrics is not None and name else None
        self._wlock = threading.Lock()
        self._wcond = threading.Condition(self._wlock)
        # Lazy deletion: an entry superseded by an earlier ready time is marked
        # invalid and skipped when it surfaces.
        self._heap: list[_Entry[T]] = []
        self._waiting: dict[T, _Entry[T]] = {}
        self._seq = itertools.count()
        self._stopped = False
        self._loop = threading.Thread(
            target=self._waiting_loop,
            name=f"workqueue-delay-{name or hex(id(self))}",
            daemon=True,
        )
        self._loop.start()

    def add_after(self, item: T, delay: float) -> None:
        """Add `item` once `delay` seconds of clock time have passed."""
        if self.shutting_down():
            return
        if self._retry_metrics is not None:
            self._retry_metrics.retry()
        if delay <= 0:
            self.add(item)
            return
        with self._wcond:
            if self._stopped:
                return
            ready_at = self._clock.now() + delay
            existing = self._waiting.get(item)
            if existing is not None:
                if existing.ready_at <= ready_at:
                    return
                existing.valid = False
            entry = _Entry(ready_at, next(self._seq), item)
            heapq.heappush(self._heap, entry)
            self._waiting[item] = entry
            if self._heap[0] is entry:
                self._wcond.notify()  # the loop's deadline is now too late

    def flush_waiting(self) -> int:
        """Add every waiting item now; returns how many. For a cause of failure that is
        known to have passed (the API server's store writes again): keys in a long
        backoff need not sit out the rest of it."""
        with self._wcond:
            items = list(self._waiting)
            self._waiting.clear()
            self._heap.clear()
        for item in items:
            self.add(item)
        return len(items)

    def num_waiting(self) -> int:
        """Items waiting for their ready time (not yet in the queue)."""
        with self._wcond:
            return len(self._waiting)

    def shut_down(self) -> None:
        super().shut_down()
        self._stop_loop()

    def shut_down_with_drain(self) -> None:
        self._stop_loop()
        super().shut_down_with_drain()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Like `Queue.wait_idle`, and also waits until no due item is still waiting.

        After a `FakeClock.step` the loop needs a moment to move due items; this
        covers that gap. Items not yet due are ignored. Polls every millisecond.
        """
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            # Lock order as in the loop: waiting lock, then queue lock, so an item
            # moving from the heap to the queue is seen in one place or the other.
            with self._wcond:
                now = self._clock.now()
                due = any(e.valid and e.ready_at <= now for e in self._heap)
                with self._lock:
                    if not due and self._is_idle_locked():
                        return True
            if end is not None and time.monotonic() >= end:
                return False
            time.sleep(0.001)

    def _stop_loop(self) -> None:
        with self._wcond:
            self._stopped = True
            self._heap.clear()
            self._waiting.clear()
            self._wcond.notify_all()
        if threading.current_thread() is not self._loop:
            self._loop.join(timeout=5.0)

    def _waiting_loop(self) -> None:
        with self._wcond:
            while not self._stopped:
                now = self._clock.now()
                heap = self._heap
                while heap and heap[0].ready_at <= now:
                    entry = heapq.heappop(heap)
                    if entry.valid:
                        del self._waiting[entry.item]
                        try:
                            self.add(entry.item)
                        except Exception:  # a broken metrics hook must not stop the loop
                            logger.exception("workqueue {}: add of a due item failed", self.name)
                while heap and not heap[0].valid:
                    heapq.heappop(heap)
                deadline = now + MAX_WAIT
                if heap and heap[0].ready_at < deadline:
                    deadline = heap[0].ready_at
                self._clock.condition_wait_until(self._wcond, deadline)
