"""The process heap and CPython's cyclic garbage collector, for a long-running GM.

A full (generation 2) collection walks every container object the process tracks: the
interpreter's startup heap (modules, CRD schemas: ~100 000 objects), the informer
caches and, in the embedded mode, the API server's store and watch history. It runs
whenever a quarter of that heap's size has been promoted since the last one, on
whichever thread happens to allocate, and stops every thread for the whole walk:
150-250 ms was seen with 1 000 jobs, in the middle of the LC report -> pod path.

``HeapSettler`` instead collects at its own pace and freezes what survived
(``gc.freeze``): frozen objects stay alive as before and are still freed by
reference counting when dropped, but later collections no longer walk them, so each
collection walks only what was allocated since the previous one. What freezing gives
up is reclaiming a reference cycle that was alive at a freeze and dropped afterwards
(a finished request's task, say): the caches and the store hold JSON trees, which
have no cycles, so that is little, and every ``full_every`` rounds the settler
unfreezes and collects everything once, which bounds it.

While the GM starts (plugins imported, the informers' first lists) the heap only grows,
by JSON trees without cycles, and the collector's automatic rounds walk it again and
again on whichever thread allocates: about 55 ms of a start with 2,000 jobs, on the
way to ready. ``hold`` turns them off until the first settle after ``start``, which
collects once, after the caches are in. The CLI has that settle come one interval
after the GM turned ready: it walks the whole heap with every thread stopped (tens of
ms at 2,000 jobs), which just then held up the first answers of the ready GM.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable

from loguru import logger

# seconds between settles: each walks what survived since the previous one
DEFAULT_INTERVAL = 2.0
DEFAULT_FULL_EVERY = 1800  # one collection of the whole heap per hour at the default interval


class HeapSettler:
    """Collect, then freeze the survivors, every ``interval`` seconds."""

    def __init__(
        self, interval: float = DEFAULT_INTERVAL, full_every: int = DEFAULT_FULL_EVERY
    ) -> None:
        self.interval = interval
        self.full_every = max(1, full_every)
        self.rounds = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._held = False  # the automatic collector was turned off by `hold`
        self._lock = threading.Lock()
        self._after_first: Callable[[], None] | None = None

    def settle(self) -> float:
        """One round; returns the seconds it stalled the process."""
        started = time.perf_counter()
        self.rounds += 1
        full = self.rounds % self.full_every == 0
        if full:
            gc.unfreeze()  # this round reclaims cycles frozen earlier too
        gc.collect()
        gc.freeze()
        took = time.perf_counter() - started
        # (no gc.get_freeze_count() here: it walks every frozen object)
        logger.debug(
            "heap settled in {:.3f}s ({})", took, "whole heap" if full else "since the last round"
        )
        return took

    def hold(self) -> None:
        """No automatic collection until ``start`` or ``stop`` (see the module docstring).

        Only a collector that is on is turned off, and only that one is turned back on.
        """
        if self._thread is None and not self._held and gc.isenabled():
            gc.disable()
            self._held = True

    def _release(self) -> None:
        with self._lock:
            if self._held:
                self._held = False
                gc.enable()

    def start(
        self, *, settle_now: bool = True, after_first: Callable[[], None] | None = None
    ) -> None:
        """Settle now (``settle_now``, else first after ``interval``), then every
        ``interval`` seconds on a daemon thread; a ``hold`` ends with the first settle,
        and ``after_first`` runs once after it."""
        if self._thread is not None:
            return
        self._after_first = after_first
        if settle_now:
            self.settle()
            self._first_done()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="heap-settler", daemon=True)
        self._thread.start()

    def _first_done(self) -> None:
        self._release()
        then, self._after_first = self._after_first, None
        if then is not None:
            then()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            if self.rounds and self.quiet():
                continue  # (never the first round: it ends a `hold`)
            self.settle()
            self._first_done()

    @staticmethod
    def quiet(counts: tuple[int, int, int] | None = None) -> bool:
        """Whether nothing worth a round was allocated since the last (`counts`: the
        collector's, `gc.get_count()`): not one young collection ran, and fewer container
        objects were added than would start one. An idle GM then skips the round."""
        young, middle, old = gc.get_count() if counts is None else counts
        return middle == 0 and old == 0 and young < gc.get_threshold()[0]

    def stop(self) -> None:
        """Stop settling and give the frozen objects back to the collector."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        self._release()
        gc.unfreeze()
