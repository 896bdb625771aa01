"""Whether the store can write, for ``/readyz`` and for the GM's readiness in embedded mode.

A full or failing disk is noticed by the write that fails; from then on the store is
unhealthy and a probe write is tried every ``probe_interval`` seconds on the server's
loop, so readiness comes back once the disk has room again even when no client writes
(controllers in backoff may wait minutes before their next try). A successful client
write clears it too.

``error`` is read from other threads (the GM's health endpoint): a plain attribute
holding an immutable string, replaced as a whole.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from loguru import logger

DEFAULT_PROBE_INTERVAL = 1.0


class StoreHealth:
    """The last write error (None: writes succeed) and the probe that clears it."""

    def __init__(self, probe_interval: float = DEFAULT_PROBE_INTERVAL) -> None:
        self.error: str | None = None
        self.failures = 0
        self.probe_interval = probe_interval
        self._loop: asyncio.AbstractEventLoop | None = None
        self._probe: Callable[[], None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        # called (on the loop thread, so quick) when writes go through again
        self.on_recovered: list[Callable[[], None]] = []

    def attach(self, loop: asyncio.AbstractEventLoop, probe: Callable[[], None]) -> None:
        """Probe with ``probe`` (raises while writes fail) on ``loop`` once a write failed."""
        self._loop = loop
        self._probe = probe
        if self.error is not None:
            self._schedule()

    def detach(self) -> None:
        """The server stops: no more probes."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._loop = None
        self._probe = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def failed(self, reason: str) -> None:
        """A write failed (on the loop thread)."""
        self.failures += 1
        self.error = reason
        self._schedule()

    def succeeded(self) -> None:
        """A write went through: the disk takes writes again."""
        if self.error is not None:
            self.error = None
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            for callback in list(self.on_recovered):
                try:
                    callback()
                except Exception as exc:  # a listener's bug must not fail the write
                    logger.opt(exception=exc).error("store recovery listener failed")

    def _schedule(self) -> None:
        if self._loop is None or self._timer is not None or self._loop.is_closed():
            return
        self._timer = self._loop.call_later(self.probe_interval, self._run_probe)

    def _run_probe(self) -> None:
        self._timer = None
        if self.error is None or self._probe is None:
            return
        try:
            self._probe()
        except Exception as exc:
            self.error = describe(exc)
            self._schedule()
            return
        self.succeeded()


def describe(exc: BaseException) -> str:
    """The failure as an operator reads it (SQLite's and the OS's own words)."""
    text = str(exc) or type(exc).__name__
    return f"the store cannot write: {text}"
