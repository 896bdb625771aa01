"""Who handles the status reports that LCs send for each kind.

Kept apart from the websocket transport so an embedding application with its own
transport dispatches to the same handlers.

A handler may come with a staleness hook: `stale(message)` returns True for a report
that is older than what the object already records (a staged job whose latest
condition for that stage is newer); such a report is skipped and counted, never
applied, so a late report cannot move an object backwards. Reports reach a handler
in the order each node sent them, per object.

While a handler runs for an accepted report, `in_report()` is True: the runtime's
status writers then retry transient API errors (5xx, 429, no answer) with backoff
until the write lands or the object is gone, instead of dropping the report.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class DuplicateHandlerError(ValueError):
    """Two features registered a handler for one kind: a startup error."""


@dataclass(frozen=True)
class UpstreamMessage:
    node_name: str
    kind: str
    namespace: str
    name: str
    operation: str
    content: dict[str, Any] = field(default_factory=dict)
    # wall-clock seconds when the message layer accepted the report (0: unknown)
    received_at: float = field(default=0.0, compare=False)
    # bytes of the frame it came in (0: unknown), for the layer's byte bounds
    size: int = field(default=0, compare=False)


UpstreamHandler = Callable[[UpstreamMessage], None]
StalenessHook = Callable[[UpstreamMessage], bool]


class _ReportContext(threading.local):
    active: bool = False
    sleep: Callable[[float], None] | None = None
    stopping: Callable[[], bool] | None = None


_context = _ReportContext()


def in_report() -> bool:
    """True on a thread that is applying an accepted LC report."""
    return _context.active


def report_sleep(seconds: float) -> bool:
    """Wait before the next attempt (the dispatcher's clock); False when shutting down."""
    stopping = _context.stopping
    if stopping is not None and stopping():
        return False
    sleep = _context.sleep
    if sleep is not None:
        sleep(seconds)
    return not (stopping is not None and stopping())


class report_context:  # used as a context manager, like a function
    """Marks the current thread as applying a report (set by the dispatcher)."""

    def __init__(self, sleep: Callable[[float], None], stopping: Callable[[], bool]) -> None:
        self._sleep = sleep
        self._stopping = stopping

    def __enter__(self) -> None:
        _context.active, _context.sleep, _context.stopping = True, self._sleep, self._stopping

    def __exit__(self, *exc: object) -> None:
        _context.active, _context.sleep, _context.stopping = False, None, None


class UpstreamRegistry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._handlers: dict[str, UpstreamHandler] = {}
        self._stale: dict[str, StalenessHook] = {}
        self._node_checked: set[str] = set()

    def register(
        self,
        kind: str,
        handler: UpstreamHandler,
        *,
        stale: StalenessHook | None = None,
        node_checked: bool = False,
    ) -> None:
        """`node_checked`: the handler itself authorizes the reporting node (the workers of
        owned workloads are placed by the scheduler, not routed: their handler checks that
        a worker of the object is bound to that node), so the message layer's routing
        check does not apply to this kind."""
        key = kind.lower()
        with self._lock:
            if key in self._handlers:
                raise DuplicateHandlerError(
                    f"an upstream handler for kind {key} is already registered"
                )
            self._handlers[key] = handler
            if stale is not None:
                self._stale[key] = stale
            if node_checked:
                self._node_checked.add(key)

    def node_checked(self, kind: str) -> bool:
        return kind.lower() in self._node_checked

    def handler_for(self, kind: str) -> UpstreamHandler | None:
        return self._handlers.get(kind.lower())

    def staleness_hook(self, kind: str) -> StalenessHook | None:
        return self._stale.get(kind.lower())

    def kinds(self) -> list[str]:
        with self._lock:
            return sorted(self._handlers)

    def dispatch(self, message: UpstreamMessage) -> bool:
        """Run the handler for the message's kind in the caller's thread; False if none."""
        handler = self.handler_for(message.kind)
        if handler is None:
            return False
        stale = self.staleness_hook(message.kind)
        if stale is not None and stale(message):
            return True
        handler(message)
        return True
