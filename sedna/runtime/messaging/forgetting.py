"""Forgetting nodes, so that the message layer's memory follows the cluster's nodes.

Without this, every node that ever received a message would keep its queue (and its
lc_queue_depth series) for the life of the GM, and a node that comes back under the
same name much later would receive messages meant for its previous life. There are
two ways a node is forgotten:

- `node_deleted`: its Node object left the cluster (a delete event of a nodes
  informer, a tombstone after a missed delete included). Its waiting messages go,
  and a connected LC is disconnected: it may reconnect and then starts fresh.
- `idle`: its LC is not connected and no new message arrived for
  `websocket.idleQueueTTLSeconds`. This needs no cluster at all, so it bounds memory
  for embedding applications that run the message layer without informers too.

Either way the node's queue is retired (see `queues`), the dropped messages are
counted in `lc_messages_forgotten_total{reason}` and the forgotten queues in
`lc_queues_forgotten_total{reason}` (both in `Metrics`). A message sent after the
forgetting starts a new queue: it was sent about the cluster as it is now (a resync,
a new job), so it is delivered when the node connects.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Mapping
from typing import Any

from loguru import logger

from sedna.runtime.clock import Clock
from sedna.runtime.informers.keys import DeletedFinalStateUnknown

# The idle sweep never runs more often than this (nor less often than the TTL needs):
# a queue is forgotten between TTL and TTL + this after its last activity.
_MAX_SWEEP_SLACK_SECONDS = 60.0
_MIN_SWEEP_INTERVAL_SECONDS = 1.0


class ForgetReason(enum.StrEnum):
    """Label values of lc_{messages,queues}_forgotten_total{reason}."""

    NODE_DELETED = "node_deleted"
    IDLE = "idle"


def _name_in(obj: object) -> str | None:
    if not isinstance(obj, Mapping):
        return None
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return None
    name = meta.get("name")
    return name if isinstance(name, str) and name else None


def deleted_node_name(event: object) -> str | None:
    """The node a delete event is about, or None if the event names no usable node.

    A tombstone (the delete happened while the watch was down) is a real deletion: its
    last known object names the node, and failing that its key does, which for a
    cluster-scoped Node is the bare name.
    """
    if isinstance(event, DeletedFinalStateUnknown):
        name = _name_in(event.obj)
        if name is None and isinstance(event.key, str) and event.key and "/" not in event.key:
            name = event.key
        return name
    return _name_in(event)


class NodeDeletionHandler:
    """A nodes-informer event handler that makes the layer forget deleted nodes.

    Adds and updates mean nothing here: a node that exists keeps its queue, and the
    layer never refuses messages for nodes the cluster does not (yet) know, since a
    job may name a node before that node registers.
    """

    def __init__(
        self, forget: Callable[[str], int], known: Callable[[str], None] | None = None
    ) -> None:
        self._forget = forget
        self._known = known

    def on_add(self, obj: Mapping[str, Any]) -> None:
        name = (obj.get("metadata") or {}).get("name")
        if self._known is not None and isinstance(name, str) and name:
            self._known(name)

    def on_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        pass

    def on_delete(self, obj: Mapping[str, Any] | DeletedFinalStateUnknown) -> None:
        name = deleted_node_name(obj)
        if name is None:
            # The object itself is not logged: it is whatever the event carried.
            logger.warning(
                "ignored a Node delete event without a node name ({}); no queue forgotten",
                type(obj).__name__,
            )
            return
        self._forget(name)


class IdleSweeper:
    """A thread that periodically asks the layer to forget disconnected, idle queues.

    `sweep(now)` forgets what expired at `now` and returns the time the next queue
    expires (None if none can expire yet). The thread sleeps on the injected clock
    until then, or a TTL from now when nothing can expire yet (a queue that goes
    idle meanwhile expires no earlier). Each wake is put off by a slack of a tenth
    of the TTL, at most `_MAX_SWEEP_SLACK_SECONDS`, and sweeps are at least
    `_MIN_SWEEP_INTERVAL_SECONDS` apart: queues expiring one after another then
    cost one sweep, not one each, at the price of forgetting them a little late.
    """

    def __init__(self, ttl: float, clock: Clock, sweep: Callable[[float], float | None]) -> None:
        if ttl <= 0:
            raise ValueError("the idle TTL of a sweeper must be positive")
        self._ttl = ttl
        self._clock = clock
        self._sweep = sweep
        self._slack = min(_MAX_SWEEP_SLACK_SECONDS, ttl / 10)
        self._cond = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="lc-queue-sweeper", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            now = self._clock.now()
            try:
                due = self._sweep(now)
            except Exception as exc:  # a bug here must not end the sweeping for good
                logger.opt(exception=exc).error("idle queue sweep failed")
                due = None
            wake = now + self._ttl if due is None else due + self._slack
            wake = max(wake, now + _MIN_SWEEP_INTERVAL_SECONDS)
            with self._cond:
                if self._stopping:
                    return
                self._clock.condition_wait_until(self._cond, wake)
                if self._stopping:
                    return
