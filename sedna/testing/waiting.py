"""Polling with a deadline: a deadline, not a timing assert."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def poll(
    pred: Callable[[], Any],
    timeout: float,
    *,
    interval: float,
    failure: str | Callable[[Any], str],
) -> Any:
    """Call pred() every `interval` seconds until it is truthy and return that value;
    raise AssertionError(failure) once `timeout` seconds have passed without
    (`failure` may be a function of pred()'s last value, to show what was seen)."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(failure(value) if callable(failure) else failure)
        time.sleep(interval)


def wait_until(pred: Callable[[], Any], timeout: float = 5.0, what: str = "condition") -> Any:
    """Poll until pred() is truthy and return it; a deadline, not a timing assert."""
    return poll(pred, timeout, interval=0.01, failure=f"timed out waiting for {what}")
