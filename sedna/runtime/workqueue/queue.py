"""The deduplicating work queue at the heart of every controller (client-go's `workqueue.Typed`).

Controllers are level-triggered: a key in the queue means "look at this object
again", so adding a key that is already waiting must not queue it twice, and a
key must never be worked on by two workers at once (two syncs of one job
racing could both create the same pod). The queue guarantees both:

* `add` marks a key dirty; a dirty key that is waiting is not queued again.
* A key handed out by `get` is *processing* until `done`. Adding it meanwhile
  only marks it dirty; `done` then queues it again, so the change that came in
  during the sync is not lost and still no second worker gets it.
* After `shut_down`, adds are ignored; `get` keeps handing out what is queued
  and returns `(None, True)` once the queue is empty. `shut_down_with_drain`
  additionally blocks until no item is processing (not until the queue is
  empty: with no worker left that could never happen), exactly as client-go.

Items must be hashable. All state is guarded by one lock; `get` waits on a
condition of that lock, and draining / idle waiters use a second condition so
that the single-waiter `notify` used to hand an item to one `get` can never be
swallowed by a thread that is not going to take it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from sedna.runtime.clock import Clock, RealClock
from sedna.runtime.workqueue.metrics import QueueMetrics, WorkqueueMetricsProvider

__all__ = ["Queue"]

T = TypeVar("T", bound=Hashable)


class Queue(Generic[T]):
    """FIFO of dirty items, each handed to at most one worker at a time."""

    def __init__(
        self,
        name: str = "",
        *,
        clock: Clock | None = None,
        metrics: WorkqueueMetricsProvider | None = None,
    ) -> None:
        self.name = name
        self._clock: Clock = clock if clock is not None else RealClock()
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)  # get() waiters
        self._idle = threading.Condition(self._lock)  # drain / wait_idle waiters
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._shutting_down = False
        self._drain = False
        # As client-go: an unnamed queue, or no provider, keeps no metrics at all.
        self._metrics: QueueMetrics[T] | None = (
            QueueMetrics(metrics, name, self._clock, self._lock)
            if metrics is not None and name
            else None
        )

    def add(self, item: T) -> None:
        """Mark `item` as needing processing; ignored once shutting down."""
        with self._lock:
            if self._shutting_down or item in self._dirty:
                return
            if self._metrics is not None:
                self._metrics.add(item)
            self._dirty.add(item)
            if item in self._processing:
                return  # done() queues it again
            self._queue.append(item)
            self._cond.notify()

    def __len__(self) -> int:
        """Items waiting to be handed out (informational; do not gate on it)."""
        with self._lock:
            return len(self._queue)

    def len(self) -> int:
        """Same as `len(queue)`, for readers coming from client-go."""
        return len(self)

    def get(self) -> tuple[T | None, bool]:
        """Block until an item is available; `(None, True)` means stop working.

        The caller must call `done(item)` when it has finished with the item.
        """
        with self._lock:
            while not self._queue and not self._shutting_down:
                self._cond.wait()
            if not self._queue:
                return None, True
            item = self._queue.popleft()
            if self._metrics is not None:
                self._metrics.get(item)
            self._processing.add(item)
            self._dirty.discard(item)
            return item, False

    def done(self, item: T) -> None:
        """Finish processing `item`; requeue it if it was added meanwhile."""
        with self._lock:
            if self._metrics is not None:
                self._metrics.done(item)
            self._processing.discard(item)
            if item in self._dirty:
                self._queue.append(item)
                self._cond.notify()
            if not self._processing:
                self._idle.notify_all()

    def shut_down(self) -> None:
        """Ignore new adds; workers get `shutdown=True` once the queue is empty.

        Also releases a concurrent `shut_down_with_drain` (a second SIGTERM).
        """
        with self._lock:
            self._drain = False
            self._shutting_down = True
            self._cond.notify_all()
            self._idle.notify_all()

    def shut_down_with_drain(self) -> None:
        """`shut_down`, then block until every processing item is `done`.

        Workers must call `done`, or this blocks until `shut_down` is called.
        """
        with self._lock:
            self._drain = True
            self._shutting_down = True
            self._cond.notify_all()
            while self._processing and self._drain:
                self._idle.wait()

    def shutting_down(self) -> bool:
        with self._lock:
            return self._shutting_down

    def processing_count(self) -> int:
        """Items handed out and not yet done."""
        with self._lock:
            return len(self._processing)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block (real time) until nothing is queued or processing; a test helper.

        Returns False on timeout. Delayed items not yet due do not count (see
        `DelayingQueue.wait_idle`).
        """
        end = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while self._queue or self._processing:
                remaining = None if end is None else end - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._idle.wait(remaining)
            return True

    def _is_idle_locked(self) -> bool:
        return not self._queue and not self._processing
