"""What a node's LC holds: the last message of every object routed to it, for replay.

An LC keeps the objects the GM sent it in memory, so one that restarts (or a new LC on
the same node) comes back empty. Sedna's GM, and the controllers' own resync, re-send
only every 30-60 s, so a reconnected LC would idle until then. The queue therefore
remembers, per object, the last insert or update it took for the node (a delete
forgets the object), and a connection starts by replaying all of them: the LC has
every object routed to it as soon as it is back, and no other node is touched.

Replay order follows what Sedna's LC needs: Datasets, then Models, then the objects
that use them (jobs and services), each group in the order of its last send. Memory is
one encoded frame per routed object (the string the queue already held, not a copy),
at most the queue's bound per node, since a replay must fit in the queue; beyond it the
object sent longest ago is no longer replayed (`evicted` counts them, and the layer
warns at the next replay that the bound is too small for that node).

Not thread-safe: `NodeQueue` uses it under its own lock.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sedna.runtime.messaging.queues import Outgoing

# Lower-cased kinds replayed first, in this order: what the others refer to.
REPLAY_FIRST = ("dataset", "model")


class Retained:
    """The last routed message per key of one node, bounded (oldest last-send evicted)."""

    __slots__ = ("_bound", "_items", "evicted")

    def __init__(self, bound: int) -> None:
        self._bound = bound
        self._items: OrderedDict[str, Outgoing] = OrderedDict()
        self.evicted = 0  # objects no longer replayed for want of room

    def __len__(self) -> int:
        return len(self._items)

    def record(self, msg: Outgoing) -> None:
        """Remember msg as its object's latest state on the node (a delete forgets it)."""
        items = self._items
        if msg.header.operation == "delete":
            items.pop(msg.key, None)
            return
        items[msg.key] = msg
        items.move_to_end(msg.key)
        while len(items) > self._bound:
            items.popitem(last=False)
            self.evicted += 1

    def in_replay_order(self) -> Iterator[Outgoing]:
        """Every retained message: `REPLAY_FIRST` kinds first, then the rest."""
        for kind in REPLAY_FIRST:
            for msg in self._items.values():
                if msg.header.kind == kind:
                    yield msg
        for msg in self._items.values():
            if msg.header.kind not in REPLAY_FIRST:
                yield msg

    def clear(self) -> None:
        self._items.clear()
