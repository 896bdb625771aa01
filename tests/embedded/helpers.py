"""Polling with a deadline: the simulated nodes act on their own threads."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from support.waiting import poll

T = TypeVar("T")


def wait_for(probe: Callable[[], T | None], what: str, timeout: float = 10.0) -> T:
    """Return probe()'s first truthy value; fail naming `what` after `timeout` seconds."""
    result: T = poll(
        probe,
        timeout,
        interval=0.02,
        failure=lambda last: f"timed out after {timeout:g} s waiting for {what} (last: {last!r})",
    )
    return result
