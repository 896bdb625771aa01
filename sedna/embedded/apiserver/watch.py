"""The watch hub: retained event history and live subscribers.

Every committed write becomes one ``Event``; the hub keeps the last ``history`` of them,
and no more than ``history_bytes`` of their JSON (a count alone lets a few large
objects pin gigabytes),
(so a client can resume from a resourceVersion) and pushes each to the queues of the
live watchers of that resource. Everything here runs on the server's event loop thread.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from .selectors import Matcher

DEFAULT_HISTORY_BYTES = 64 * 1024 * 1024


@dataclass(eq=False)
class Event:
    """One committed change. ``old`` lets filtered watches turn MODIFIED into ADDED/DELETED."""

    type: str
    key: tuple[str, str]
    namespace: str
    obj: dict[str, Any]
    old: dict[str, Any] | None
    rv: int
    _raw: bytes | None = None

    def raw(self) -> bytes:
        """The object's JSON, serialized once however many watchers receive it."""
        if self._raw is None:
            self._raw = orjson.dumps(self.obj)
        return self._raw


@dataclass(eq=False)
class Watcher:
    """A live watch: what it selects and the queue the hub feeds."""

    key: tuple[str, str]
    namespace: str | None
    matcher: Matcher | None
    queue: asyncio.Queue[tuple[str, Event] | None] = field(default_factory=asyncio.Queue)

    def offer(self, ev: Event) -> None:
        """Queue the event as this watcher should see it (or not at all)."""
        if self.namespace is not None and ev.namespace != self.namespace:
            return
        typ = translate(ev, self.matcher)
        if typ is not None:
            self.queue.put_nowait((typ, ev))


def translate(ev: Event, matcher: Matcher | None) -> str | None:
    """The event type a selector-filtered watch sees, as kube's cacher computes it."""
    if matcher is None:
        return ev.type
    cur = matcher(ev.obj)
    if ev.type == "MODIFIED":
        was = ev.old is not None and matcher(ev.old)
        if cur and was:
            return "MODIFIED"
        if cur:
            return "ADDED"
        if was:
            return "DELETED"
        return None
    return ev.type if cur else None


class WatchHub:
    """History ring plus fan-out to watchers, indexed by resource."""

    def __init__(self, history: int, history_bytes: int = DEFAULT_HISTORY_BYTES) -> None:
        self.history: deque[Event] = deque()
        self.limit = max(1, history)
        self.byte_limit = max(1, history_bytes)
        self.bytes = 0
        # events with rv <= compacted_rv are gone; a watch from rv < compacted_rv gets 410
        self.compacted_rv = 0
        self.watchers: dict[tuple[str, str], set[Watcher]] = {}

    def publish(self, ev: Event) -> None:
        """Record and fan out one event."""
        self.history.append(ev)
        self.bytes += len(ev.raw())
        while len(self.history) > self.limit or (
            self.bytes > self.byte_limit and len(self.history) > 1
        ):
            gone = self.history.popleft()
            self.bytes -= len(gone.raw())
            self.compacted_rv = gone.rv
        subs = self.watchers.get(ev.key)
        if subs:
            for w in subs:
                w.offer(ev)

    def compact(self, rv: int) -> None:
        """Forget all history up to ``rv`` (fault injection: forces 410 for older watches)."""
        while self.history and self.history[0].rv <= rv:
            self.bytes -= len(self.history.popleft().raw())
        self.compacted_rv = max(self.compacted_rv, rv)

    def too_old(self, rv: int) -> bool:
        """True when events after ``rv`` are no longer all retained."""
        return rv < self.compacted_rv

    def since(self, key: tuple[str, str], rv: int) -> Iterator[Event]:
        """Retained events of one resource after ``rv``, oldest first.

        Read from the newest back to ``rv``, so the cost is the events since ``rv``,
        not the whole ring (a list page asks this with its first page's version)."""
        newer: list[Event] = []
        for ev in reversed(self.history):
            if ev.rv <= rv:
                break
            if ev.key == key:
                newer.append(ev)
        return reversed(newer)

    def subscribe(self, w: Watcher) -> None:
        """Start feeding a watcher."""
        self.watchers.setdefault(w.key, set()).add(w)

    def unsubscribe(self, w: Watcher) -> None:
        """Stop feeding a watcher (its stream ended)."""
        subs = self.watchers.get(w.key)
        if subs is not None:
            subs.discard(w)

    def close_all(self) -> None:
        """Wake every watcher with end-of-stream (server shutdown)."""
        for subs in self.watchers.values():
            for w in subs:
                w.queue.put_nowait(None)
