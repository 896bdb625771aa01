"""cProfile on every thread of a benchmark process, merged into one report.

cProfile sees only the thread that enabled it, and a GM is mostly threads (informers,
workers, the Event recorder), so each thread started after `profile_threads` gets a
profile of its own.
"""

from __future__ import annotations

import cProfile
import pstats
import threading
from collections.abc import Callable


def profile_threads(
    timer: Callable[[], float] | None = None, *, this_thread: bool = False
) -> Callable[[], pstats.Stats]:
    """Profile every thread started from now on (and this one with `this_thread`);
    returns a function that merges what they recorded so far (threads may still run).

    `timer`: e.g. `time.thread_time` for CPU rather than wall time.
    """
    profiles: list[cProfile.Profile] = []
    original = threading.Thread.run

    def new_profile() -> cProfile.Profile:
        prof = cProfile.Profile(timer) if timer is not None else cProfile.Profile()
        profiles.append(prof)
        return prof

    def run(self: threading.Thread) -> None:
        prof = new_profile()
        prof.enable()
        try:
            original(self)
        finally:
            prof.disable()

    threading.Thread.run = run  # type: ignore[method-assign]
    if this_thread:
        new_profile().enable()

    def merged() -> pstats.Stats:
        for p in profiles:
            p.create_stats()  # stops it: what it recorded so far
        return pstats.Stats(*profiles)

    return merged
