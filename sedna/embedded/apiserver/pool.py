"""The write pool: where patches are applied, large writes worked out and large bodies
decoded, off the server's loop (``writes``, ``handlers``).

Two threads keep a flood of such jobs from taking every core. A job keeps the loop
free only while it lets go of the GIL, and one thing in a job did not: CPython's
cyclic garbage collector, which holds the GIL for the whole of each collection. The
objects a large job allocates (the hundreds of thousands of lists of a JSON-patch copy
bomb, the copies of a 3 MB object) set off full collections, each a walk of the
interpreter's heap and of the job's objects: 30-45 ms during which the loop, waiting
for the GIL, stalled as if the job ran on it.

A job makes JSON trees, which hold no reference cycles: reference counting frees them
and a collection finds nothing in them. So the collector is off while a job runs
(`collector_paused`). The job's objects are then never walked, nor promoted to the
old generation (which would make a full collection due once they are gone); when the
last job ends, the young generation is about as small as before. A flood of jobs that
leaves no gap gives the collector back after `MAX_PAUSE`, until the pool drains, so it
cannot keep the rest of the process from reclaiming its cycles.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

# the threads' names start with this (tests check where work ran)
THREAD_PREFIX = "apiserver-patch"
POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix=THREAD_PREFIX)
# seconds the collector may stay off while jobs follow one another without a gap
MAX_PAUSE = 2.0


class CollectorPause:
    """The cyclic collector off while at least one job runs (jobs on any thread).

    It is turned back on only if it was on before; a collection asked for explicitly
    (``gc.collect``, the GM's heap settler) still runs.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._jobs = 0
        self._since = 0.0
        self._paused = False  # turned off here (and not back on yet)

    def begin(self) -> None:
        """A job starts."""
        with self._lock:
            self._jobs += 1
            if self._jobs == 1:
                self._since = self._clock()
                self._paused = gc.isenabled()
                gc.disable()
            else:
                self._end_a_long_pause()

    def end(self) -> None:
        """A job ended."""
        with self._lock:
            self._jobs -= 1
            if self._jobs == 0:
                self._resume()
            else:
                self._end_a_long_pause()

    def _end_a_long_pause(self) -> None:
        if self._clock() - self._since > MAX_PAUSE:
            self._resume()  # and no new pause before the pool drains

    def _resume(self) -> None:
        if self._paused:
            gc.enable()
            self._paused = False


collector_paused = CollectorPause()


def _job(fn: Callable[..., T], *args: Any) -> T:
    collector_paused.begin()
    try:
        return fn(*args)
    finally:
        collector_paused.end()


async def off_loop(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` on the pool, the cyclic collector off while it runs."""
    return await asyncio.get_running_loop().run_in_executor(POOL, _job, fn, *args)
