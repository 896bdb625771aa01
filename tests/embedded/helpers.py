"""Polling with a deadline (the simulated nodes act on their own threads), and stepping a
simulated LC's virtual time."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from support.waiting import poll

from sedna.runtime.clock import FakeClock

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


def advance_until(clock: FakeClock, probe: Callable[[], Any], what: str) -> Any:
    """Step virtual time by LC ticks until probe() is truthy."""
    for _ in range(400):
        got = probe()
        if got:
            return got
        wait_for(clock.has_waiters, "the LC to wait for its next tick")
        clock.step(0.5)
        time.sleep(0.005)
    raise AssertionError(f"{what} did not happen within 200 s of virtual time")
