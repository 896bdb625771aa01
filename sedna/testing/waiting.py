"""Polling with a deadline: a deadline, not a timing assert."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

# short enough that a test waits little past the moment, long enough to leave the CPU
# to the threads it waits for
DEFAULT_INTERVAL = 0.02


def poll(
    pred: Callable[[], Any],
    timeout: float,
    *,
    interval: float = DEFAULT_INTERVAL,
    failure: str | Callable[[Any], str] | None = None,
) -> Any:
    """Call pred() every `interval` seconds until it is truthy and return that value;
    raise AssertionError(failure) once `timeout` seconds have passed without
    (`failure` may be a function of pred()'s last value, to show what was seen; without
    it the message gives the timeout and that value)."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            if failure is None:
                raise AssertionError(f"not true within {timeout} s (last value: {value!r})")
            raise AssertionError(failure(value) if callable(failure) else failure)
        time.sleep(interval)


def wait_until(pred: Callable[[], Any], timeout: float = 5.0, what: str = "condition") -> Any:
    """Poll until pred() is truthy and return it; a deadline, not a timing assert."""
    return poll(pred, timeout, interval=0.01, failure=f"timed out waiting for {what}")
