"""Small real-time waits for thread hand-offs; the time under test is always a FakeClock."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    """Poll `predicate` every millisecond until true or `timeout` real seconds pass."""
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= end:
            return False
        time.sleep(0.001)
    return True
