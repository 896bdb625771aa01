"""Per-node downstream queues: coalescing, bounded, shared by controller threads and the loop.

Sedna's Go GM keeps, per node, a workqueue of `kind/namespace/name` keys and a store
with the latest message per key, so several sends for one object collapse to the
newest. `NodeQueue` is that pair in one ordered dict:

- A newer message for a key that is already waiting **takes the older one's place**
  (the key keeps its position), as re-adding a queued key to a workqueue does not
  move it. An object that changes all the time therefore cannot starve the others,
  and since at most one message per key waits, the order per key is kept.
- The queue is bounded (`maxQueuePerNode`): a node that stays away must not grow
  memory without limit. At the bound the oldest waiting message is dropped and
  returned so that the caller can log and count it. Nothing is lost for good: the
  controllers resend on their next resync.
- A message whose write failed goes back to the front, unless a newer message for
  its key arrived meanwhile (then the newer one supersedes it).
- The queue also remembers the last message of every object routed to the node
  (`retained`), and `replay` queues them all again when an LC connects, so an LC that
  restarted gets everything at once instead of at the controllers' next resync.

The queue is guarded by a plain lock because its writers are controller threads and
its reader is the asyncio loop; no operation blocks while holding it. The loop's
writer *arms* a waker when it finds the queue empty, and the next `put` fires it,
so a busy writer costs no cross-thread wake-ups at all.

A queue can be *retired* when the message layer forgets its node (the Node object was
deleted, or the node stayed away and idle too long). Retiring empties it and refuses
every later `put` with `QueueRetired`, atomically under the queue's lock: a sender
that looked the queue up just before it was forgotten then retries on the node's new
queue instead of feeding one that nobody will ever drain.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from sedna.runtime.messaging.retained import Retained
from sedna.runtime.messaging.wire import Header


class _DepthGauge(Protocol):
    def set(self, value: float) -> None: ...


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One downstream message, already encoded so that the caller's object may change after."""

    header: Header
    frame: str
    credential: bool = False

    @property
    def key(self) -> str:
        return self.header.key


Waker = Callable[[], None]


class QueueRetired(Exception):
    """The queue was forgotten between looking it up and using it; look it up again."""


class NodeQueue:
    """The waiting downstream messages of one node (see the module docstring for the rules)."""

    def __init__(
        self,
        node: str,
        bound: int,
        depth_gauge: _DepthGauge | None = None,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        if bound < 1:
            raise ValueError("queue bound must be at least 1")
        self.node = node
        self._bound = bound
        self._gauge = depth_gauge
        self._now = now
        self._lock = threading.Lock()
        self._items: OrderedDict[str, Outgoing] = OrderedDict()
        self._retained = Retained(bound)
        self._waker: Waker | None = None
        self._retired = False
        # When the queue last saw a new message or its node's connection ended; the
        # idle sweep forgets a disconnected node's queue only after a quiet spell.
        self._last_active = now()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def keys(self) -> list[str]:
        """Waiting keys in delivery order (for tests and debugging)."""
        with self._lock:
            return list(self._items)

    def _set_depth(self) -> None:
        if self._gauge is not None:
            self._gauge.set(len(self._items))

    @property
    def last_active(self) -> float:
        with self._lock:
            return self._last_active

    def touch(self) -> None:
        """Restart the idle time (its node just disconnected: the quiet spell starts now)."""
        now = self._now()
        with self._lock:
            self._last_active = max(self._last_active, now)

    def put(self, msg: Outgoing) -> Outgoing | None:
        """Queue msg; return the message dropped to respect the bound, if any.

        Raises QueueRetired if the node's queue was forgotten meanwhile.
        """
        dropped: Outgoing | None = None
        now = self._now()
        with self._lock:
            if self._retired:
                raise QueueRetired(self.node)
            self._last_active = max(self._last_active, now)
            self._retained.record(msg)
            items = self._items
            if msg.key in items:
                items[msg.key] = msg
            else:
                if len(items) >= self._bound:
                    _, dropped = items.popitem(last=False)
                items[msg.key] = msg
            self._set_depth()
            waker, self._waker = self._waker, None
        if waker is not None:
            waker()
        return dropped

    def pop_or_arm(self, waker: Waker) -> Outgoing | None:
        """Take the next message, or, if none waits, arm waker for the next put (atomically)."""
        with self._lock:
            if self._items:
                _, msg = self._items.popitem(last=False)
                self._set_depth()
                return msg
            self._waker = waker
            return None

    def disarm(self, waker: Waker) -> None:
        """Forget waker if it is still armed, so that a gone connection is not woken."""
        with self._lock:
            # == not `is`: a bound method is a new object on every attribute access.
            if self._waker == waker:
                self._waker = None

    def requeue(self, msg: Outgoing) -> Outgoing | None:
        """Put back a message whose write failed; return one dropped to respect the bound."""
        dropped: Outgoing | None = None
        with self._lock:
            if self._retired:
                return None  # the node was forgotten: its in-flight message goes too
            items = self._items
            if msg.key in items:
                return None  # a newer message for this key supersedes the failed one
            items[msg.key] = msg
            items.move_to_end(msg.key, last=False)
            if len(items) > self._bound:
                _, dropped = items.popitem(last=False)
            self._set_depth()
            waker, self._waker = self._waker, None
        if waker is not None:
            waker()
        return dropped

    def replay(self) -> list[Outgoing]:
        """Queue every retained message again (an LC connects); return those dropped.

        Waiting deletes go first (they clear what the LC may still hold), then the
        retained messages in replay order (`Retained.in_replay_order`), a waiting one
        keeping its place in that order. Over the bound, the waiting deletes give way
        first: an LC that starts empty does not need them.
        """
        with self._lock:
            if self._retired:
                return []
            items = self._items
            merged: OrderedDict[str, Outgoing] = OrderedDict(
                (key, msg) for key, msg in items.items() if msg.header.operation == "delete"
            )
            for msg in self._retained.in_replay_order():
                merged[msg.key] = items.get(msg.key, msg)
            for key, msg in items.items():
                merged.setdefault(key, msg)
            dropped: list[Outgoing] = []
            while len(merged) > self._bound:
                dropped.append(merged.popitem(last=False)[1])
            self._items = merged
            self._set_depth()
            waker: Waker | None = None
            if merged:
                waker, self._waker = self._waker, None
        if waker is not None:
            waker()
        return dropped

    @property
    def retained(self) -> int:
        """How many objects the queue would replay to a connecting LC."""
        with self._lock:
            return len(self._retained)

    @property
    def retained_evicted(self) -> int:
        """Routed objects no longer replayed because the node has more than the bound."""
        with self._lock:
            return self._retained.evicted

    def clear(self) -> int:
        """Forget every waiting message (at shutdown); return how many there were."""
        with self._lock:
            n = len(self._items)
            self._items.clear()
            self._retained.clear()
            self._set_depth()
            self._waker = None
            return n

    def retire(self) -> int:
        """Empty the queue for good (its node is forgotten); return how many messages it held.

        A writer still armed on it is not woken: the caller closes that connection.
        Retiring twice returns 0 the second time, so a message is never counted twice.
        """
        with self._lock:
            return self._retire_locked()

    def retire_if_idle(self, cutoff: float) -> int | None:
        """Retire the queue if it was last active at or before cutoff; None if it was not.

        Checking and retiring under one lock hold is what keeps a message put at the
        last moment from landing in a queue that is being forgotten.
        """
        with self._lock:
            if self._retired or self._last_active > cutoff:
                return None
            return self._retire_locked()

    def _retire_locked(self) -> int:
        if self._retired:
            return 0
        self._retired = True
        n = len(self._items)
        self._items.clear()
        self._retained.clear()
        self._set_depth()
        self._waker = None
        return n
