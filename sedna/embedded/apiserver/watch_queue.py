"""A watch's queue of events not yet written to its client, bounded in events and bytes.

A client that reads slower than the server writes (or not at all) leaves its events
queued; unbounded, one stalled watch of a busy resource would hold every event since.
As kube-apiserver's cacher does with a watcher whose channel stays full, the watch is
closed instead: the queue is dropped and ends with end-of-stream, and the client
watches again from the last resourceVersion it saw (or relists on 410). Events are
shared with the history and the other watches; what a queue adds is its references,
and the bytes it keeps alive once the history has let go of them.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .watch import Event
    from .watch_limits import WatchLimits

Item = tuple[str, "Event"] | None


class EventQueue(asyncio.Queue[Item]):
    """``asyncio.Queue`` that closes itself (end-of-stream) when its bound is passed."""

    def __init__(self, limits: WatchLimits) -> None:
        super().__init__()
        self._limits = limits
        self.bytes = 0
        # set once the bound was passed: the stream ends, without a closing bookmark
        self.overflowed = False

    def put_nowait(self, item: Item) -> None:
        if self.overflowed:
            return
        if item is not None:
            size = len(item[1].raw())
            lim = self._limits
            if self.qsize() >= lim.queue_events or self.bytes + size > lim.queue_bytes:
                self._overflow()
                return
        super().put_nowait(item)

    def _overflow(self) -> None:
        self.overflowed = True
        self._limits.closed_slow += 1
        while not self.empty():
            self.get_nowait()
        super().put_nowait(None)

    # asyncio.Queue's own hooks for what a queue holds (as PriorityQueue uses them)
    def _put(self, item: Item) -> None:
        if item is not None:
            size = len(item[1].raw())
            self.bytes += size
            self._limits.queued_bytes += size
        super()._put(item)

    def _get(self) -> Item:
        item = super()._get()
        if item is not None:
            size = len(item[1].raw())
            self.bytes -= size
            self._limits.queued_bytes -= size
        return item

    def drop(self) -> None:
        """The watch ended: what is left no longer counts."""
        self._limits.queued_bytes -= self.bytes
        self.bytes = 0
