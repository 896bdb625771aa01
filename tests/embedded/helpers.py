"""Polling with a deadline: the simulated nodes act on their own threads."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(probe: Callable[[], T | None], what: str, timeout: float = 10.0) -> T:
    """Return probe()'s first truthy value; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what} (last: {last!r})")
