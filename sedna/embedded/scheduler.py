"""A single thread that runs timed actions in order, on an injectable clock.

The simulated kubelet and LC each own one: every write they make happens on that
thread, so a node's actions never race each other, and tests drive the delays
with a `FakeClock` instead of sleeping.

An action the API server refused for a passing reason (5xx, 429, a lost connection:
a full disk under the embedded store, say) runs again after a backoff, as a real
kubelet syncs again until its write goes through; before, the pod stayed where it
was for good and its job with it.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable

from loguru import logger

from sedna.runtime.clock import Clock, RealClock
from sedna.runtime.kube import ServerError, TooManyRequests, TransportError

Action = Callable[[], None]
RETRY_FIRST_SECONDS = 0.5
RETRY_MAX_SECONDS = 30.0
_TRANSIENT = (ServerError, TooManyRequests, TransportError)


class Scheduler:
    """Runs `action`s at `now() + delay`, earliest first, ties in submission order."""

    def __init__(self, name: str, clock: Clock | None = None) -> None:
        self.name = name
        self.clock: Clock = clock or RealClock()
        self._cond = threading.Condition()
        # (due, order, action, failed attempts so far)
        self._heap: list[tuple[float, int, Action, int]] = []
        self._seq = itertools.count()
        self._stopped = False
        self._halted = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()

    def call_later(self, delay: float, action: Action, *, attempt: int = 0) -> None:
        with self._cond:
            if self._stopped:
                return
            due = self.clock.now() + max(0.0, delay)
            heapq.heappush(self._heap, (due, next(self._seq), action, attempt))
            self._cond.notify_all()

    def call_soon(self, action: Action) -> None:
        self.call_later(0.0, action)

    def pending(self) -> int:
        with self._cond:
            return len(self._heap)

    def request_stop(self) -> None:
        """Run no further action; safe in a signal handler (no lock, no I/O, no join).

        Pending actions are dropped by `stop()`; until then the thread wakes at its
        next due time and ends.
        """
        self._halted = True

    def stop(self, timeout: float = 5.0) -> None:
        self._halted = True
        with self._cond:
            self._stopped = True
            self._heap.clear()
            self._cond.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped and not self._halted:
                    if self._heap and self._heap[0][0] <= self.clock.now():
                        break
                    if self._heap:
                        self.clock.condition_wait_until(self._cond, self._heap[0][0])
                    else:
                        self.clock.condition_wait(self._cond, None)
                if self._stopped or self._halted:
                    return
                _, _, action, attempt = heapq.heappop(self._heap)
            try:
                action()
            except _TRANSIENT as exc:
                delay = min(RETRY_MAX_SECONDS, RETRY_FIRST_SECONDS * 2 ** min(attempt, 16))
                logger.warning(
                    "{}: action failed: {}; trying again in {:.1f} s", self.name, exc, delay
                )
                self.call_later(delay, action, attempt=attempt + 1)
            except Exception as exc:
                # One failed step must not end the node's simulation.
                logger.opt(exception=exc).warning("{}: action failed: {}", self.name, exc)
