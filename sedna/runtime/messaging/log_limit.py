"""Keeps a misbehaving LC from flooding the log with rejection lines.

Every rejection is still counted in `lc_messages_rejected_total`; only the log lines
are limited, per node and reason, with a summary of what was left out.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class LogLimiter:
    """At most `burst` lines per (node, reason) per `window` seconds."""

    def __init__(
        self, burst: int = 5, window: float = 60.0, now: Callable[[], float] = time.monotonic
    ) -> None:
        self._burst = burst
        self._window = window
        self._now = now
        self._lock = threading.Lock()
        # (node, reason) -> [window start, lines logged, lines suppressed]
        self._state: dict[tuple[str, str], list[float]] = {}

    def admit(self, node: str, reason: str) -> tuple[bool, int]:
        """(log this line?, how many were suppressed in the window that just ended)."""
        key = (node, reason)
        now = self._now()
        with self._lock:
            state = self._state.get(key)
            if state is None or now - state[0] >= self._window:
                suppressed = int(state[2]) if state is not None else 0
                self._state[key] = [now, 1, 0]
                if len(self._state) > 10000:  # nodes that went away
                    self._state = {
                        k: v for k, v in self._state.items() if now - v[0] < self._window
                    }
                return True, suppressed
            if state[1] < self._burst:
                state[1] += 1
                return True, 0
            state[2] += 1
            return False, 0
