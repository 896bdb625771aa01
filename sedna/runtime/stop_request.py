"""A stop request that a signal handler may raise: no lock is taken on the main thread.

A Python signal handler runs in the main thread between two bytecodes, also while that
thread is inside `threading.Event.wait` and holds the event's internal lock (between
`with self._cond:` and the release of `Condition.wait`). A handler that then calls
`Event.set` on that event waits for the lock its own thread holds: the process never
stops (seen as a SIGINT right after start that ran into the stop deadline).
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

POLL_SECONDS = 0.25


class StopFlag(Protocol):
    """What waits that a stop may end read: only whether it was asked for."""

    def is_set(self) -> bool: ...


class StopRequest:
    """`threading.Event`'s `set`/`is_set`/`wait`/`clear` for a stop, safe from a signal handler.

    On the main thread `set` only raises a flag (a signal handler may have interrupted a
    wait on this very object); every `wait` looks at the flag at least every
    `POLL_SECONDS`, so such a stop is seen within that time. From any other thread `set`
    also wakes the waiters at once.
    """

    def __init__(self) -> None:
        self._raised = False
        self._wake = threading.Event()

    def set(self) -> None:
        self._raised = True
        if threading.current_thread() is not threading.main_thread():
            self._wake.set()

    def is_set(self) -> bool:
        return self._raised

    def clear(self) -> None:
        self._raised = False
        self._wake.clear()

    def wait(self, timeout: float | None = None) -> bool:
        """Whether the stop was asked for, waiting at most `timeout` seconds (None: until it is)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._raised:
            step = POLL_SECONDS
            if deadline is not None:
                step = min(step, deadline - time.monotonic())
                if step <= 0:
                    break
            self._wake.wait(step)
        return self._raised
