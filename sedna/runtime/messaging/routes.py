"""Node-scoped authorization of LC reports: the Node authorizer's rule for this protocol.

A node's LC may report only on objects the GM routed to that node, in their namespace.
The routing is what the features already compute: every downstream `send(node, event,
obj)` passes here, so an insert/update routes the object to the node and a delete
ends that route. Features change nothing.

Go's GM accepts a report from any LC for any object, so an LC calling itself another
node could fail another's job, redirect its model URLs or restart its workers.

Reports may legitimately arrive before their route: after a GM restart the LCs
reconnect and report while the controllers are still resending every object. Such a
report is held (at most `per_node` per node, for `grace` seconds, while the node is
connected) and handed on as soon as the route appears; one still unrouted when its
grace ends is rejected (`not_routed`), by a timer, whether or not the node sends
again. The bytes held over every node are bounded and shared fairly: when full, the
node holding the most gives way, so one node that fills the bound and goes quiet
cannot keep every other node's early reports out. Routes live in memory; the
controllers' initial sync rebuilds them.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from sedna.runtime.messaging.fair_share import make_room, over_share
from sedna.runtime.upstream import UpstreamMessage

RouteKey = tuple[str, str, str]  # (kind lower-cased, namespace, name)


def key_of(kind: str, namespace: str, name: str) -> RouteKey:
    return (kind.lower(), namespace, name)


class RouteTable:
    """Which nodes each object is routed to (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._routes: dict[RouteKey, set[str]] = {}

    def route(self, key: RouteKey, node: str) -> bool:
        """Record that key is routed to node; True if that is new."""
        with self._lock:
            nodes = self._routes.setdefault(key, set())
            if node in nodes:
                return False
            nodes.add(node)
            return True

    def unroute(self, key: RouteKey, node: str) -> None:
        with self._lock:
            nodes = self._routes.get(key)
            if nodes is not None:
                nodes.discard(node)
                if not nodes:
                    del self._routes[key]

    def forget_node(self, node: str) -> None:
        with self._lock:
            for key in [k for k, nodes in self._routes.items() if node in nodes]:
                nodes = self._routes[key]
                nodes.discard(node)
                if not nodes:
                    del self._routes[key]

    def allows(self, key: RouteKey, node: str) -> bool:
        with self._lock:
            nodes = self._routes.get(key)
            return nodes is not None and node in nodes

    def __len__(self) -> int:
        with self._lock:
            return len(self._routes)


@dataclass(frozen=True, slots=True)
class _Held:
    msg: UpstreamMessage
    until: float


class PendingReports:
    """Reports waiting for their route, bounded per node, in bytes over every node, and in time.

    The byte bound is over every node, so that made-up node names cannot multiply it,
    and it is shared fairly (`fair_share`): when it is full, the node holding the most
    gives way, oldest report first, so one node cannot keep the others' early reports
    out. Grace ends are acted on by whoever calls `expire` on a timer (`next_expiry`
    says when), not only when the node sends again; the holder drops a node's reports
    (`drop_node`) once the node has no connection left.
    """

    def __init__(
        self,
        per_node: int,
        grace: float,
        now: Callable[[], float],
        *,
        max_bytes: int = 16 * 1024 * 1024,
    ) -> None:
        self._per_node = per_node
        self._grace = grace
        self._now = now
        self._max_bytes = max_bytes
        self._bytes = 0
        self._lock = threading.Lock()
        self._held: dict[str, deque[_Held]] = {}
        self._node_bytes: dict[str, int] = {}

    @property
    def enabled(self) -> bool:
        """Whether reports are held at all (a grace and a per-node bound above 0)."""
        return self._grace > 0 and self._per_node > 0

    @property
    def grace(self) -> float:
        return self._grace

    def hold(self, msg: UpstreamMessage) -> tuple[bool, list[UpstreamMessage]]:
        """(held, reports whose grace ended or that were pushed out to make room).

        The reports pushed out are the sender's oldest beyond `per_node`, and, when the
        bytes would exceed `max_bytes`, those of the nodes holding the most (see
        `fair_share.make_room`); they may be other nodes' reports.
        """
        if not self.enabled or msg.size > self._max_bytes:
            return False, []
        with self._lock:
            node = msg.node_name
            out = self._expire_node_locked(node)
            q = self._held.get(node)
            # at its own bound the node's oldest give way, unless the new report is refused
            mine = len(q) - self._per_node + 1 if q is not None else 0
            own = [q[i].msg.size for i in range(mine)] if q is not None else []
            loads = self._node_bytes
            if own:
                loads = dict(loads)
                loads[node] -= sum(own)
            need = self._bytes - sum(own) + msg.size - self._max_bytes
            if over_share(loads, node, msg.size, need):
                return False, out
            for _ in own:
                out.append(self._pop_locked(node))

            def pop_oldest(victim: str) -> int | None:
                if victim not in self._held:
                    return None
                popped = self._pop_locked(victim)
                out.append(popped)
                return popped.size

            make_room(self._node_bytes, node, msg.size, need, pop_oldest)
            self._held.setdefault(node, deque()).append(_Held(msg, self._now() + self._grace))
            self._node_bytes[node] = self._node_bytes.get(node, 0) + msg.size
            self._bytes += msg.size
            return True, out

    def _pop_locked(self, node: str) -> UpstreamMessage:
        """Drop the oldest report of node (which holds one); forget the node once empty."""
        q = self._held[node]
        msg = q.popleft().msg
        self._bytes -= msg.size
        left = self._node_bytes[node] - msg.size
        if q:
            self._node_bytes[node] = left
        else:
            del self._held[node]
            del self._node_bytes[node]
        return msg

    def release(
        self, node: str, key: RouteKey
    ) -> tuple[list[UpstreamMessage], list[UpstreamMessage]]:
        """(reports of node for key, now routed; reports of node whose grace ended)."""
        with self._lock:
            if node not in self._held:
                return [], []
            expired = self._expire_node_locked(node)
            q = self._held.get(node)
            if q is None:
                return [], expired
            ready = [h.msg for h in q if key_of(h.msg.kind, h.msg.namespace, h.msg.name) == key]
            if ready:
                kept = deque(h for h in q if all(h.msg is not r for r in ready))
                size = sum(m.size for m in ready)
                self._bytes -= size
                if kept:
                    self._held[node] = kept
                    self._node_bytes[node] -= size
                else:
                    del self._held[node]
                    del self._node_bytes[node]
            return ready, expired

    def drop_node(self, node: str) -> list[UpstreamMessage]:
        """Forget every report node holds (it left, or has no connection any more)."""
        with self._lock:
            q = self._held.pop(node, None)
            if q is None:
                return []
            self._bytes -= self._node_bytes.pop(node)
        return [h.msg for h in q]

    def expire(self) -> list[UpstreamMessage]:
        """Drop and return every report whose grace has ended, of every node."""
        with self._lock:
            out: list[UpstreamMessage] = []
            for node in list(self._held):
                out.extend(self._expire_node_locked(node))
            return out

    def next_expiry(self) -> float | None:
        """When the next grace ends (on the `now` clock), None if nothing is held."""
        with self._lock:
            # a node's reports are held in arrival order, so its first ends first
            return min((q[0].until for q in self._held.values()), default=None)

    def _expire_node_locked(self, node: str) -> list[UpstreamMessage]:
        now = self._now()
        out: list[UpstreamMessage] = []
        while (q := self._held.get(node)) is not None and q[0].until <= now:
            out.append(self._pop_locked(node))
        return out

    @property
    def held_bytes(self) -> int:
        with self._lock:
            return self._bytes

    def held_by(self, node: str) -> int:
        """How many reports node holds."""
        with self._lock:
            q = self._held.get(node)
            return len(q) if q is not None else 0

    def __len__(self) -> int:
        with self._lock:
            return sum(len(q) for q in self._held.values())
