"""Node-scoped authorization of LC reports: the Node authorizer's rule for this protocol.

A node's LC may report only on objects the GM routed to that node, in their namespace.
The routing is what the features already compute: every downstream `send(node, event,
obj)` passes here, so an insert/update routes the object to the node and a delete
ends that route. Features change nothing.

Go's GM accepts a report from any LC for any object, so an LC calling itself another
node could fail another's job, redirect its model URLs or restart its workers.

Reports may legitimately arrive before their route: after a GM restart the LCs
reconnect and report while the controllers are still resending every object. Such a
report is held (at most `per_node` per node, for `grace` seconds) and handed on as
soon as the route appears; one still unrouted when its grace ends is rejected
(`not_routed`). Routes live in memory; the controllers' initial sync rebuilds them.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

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
    """Reports waiting for their route, bounded per node and in time."""

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
        self._bytes = 0  # over every node: made-up node names must not multiply the bound
        self._lock = threading.Lock()
        self._held: dict[str, deque[_Held]] = {}

    def hold(self, msg: UpstreamMessage) -> tuple[bool, list[UpstreamMessage]]:
        """(held, reports of this node whose grace ended or that were pushed out)."""
        if self._grace <= 0 or self._per_node <= 0:
            return False, []
        with self._lock:
            q = self._held.setdefault(msg.node_name, deque())
            expired = self._expire_locked(q)
            while len(q) >= self._per_node:
                expired.append(self._pop_locked(q))
            if self._bytes + msg.size > self._max_bytes:
                if not q:
                    del self._held[msg.node_name]
                return False, expired
            q.append(_Held(msg, self._now() + self._grace))
            self._bytes += msg.size
            return True, expired

    def _pop_locked(self, q: deque[_Held]) -> UpstreamMessage:
        msg = q.popleft().msg
        self._bytes -= msg.size
        return msg

    def release(
        self, node: str, key: RouteKey
    ) -> tuple[list[UpstreamMessage], list[UpstreamMessage]]:
        """(reports of node for key, now routed; reports of node whose grace ended)."""
        with self._lock:
            q = self._held.get(node)
            if not q:
                return [], []
            expired = self._expire_locked(q)
            ready = [h for h in q if key_of(h.msg.kind, h.msg.namespace, h.msg.name) == key]
            if ready:
                kept = deque(h for h in q if all(h is not r for r in ready))
                self._held[node] = kept
                q = kept
                self._bytes -= sum(h.msg.size for h in ready)
            if not q:
                del self._held[node]
            return [h.msg for h in ready], expired

    def drop_node(self, node: str) -> list[UpstreamMessage]:
        with self._lock:
            q = self._held.pop(node, None)
            if q:
                self._bytes -= sum(h.msg.size for h in q)
        return [h.msg for h in q] if q else []

    def expire(self) -> list[UpstreamMessage]:
        with self._lock:
            out: list[UpstreamMessage] = []
            for node in list(self._held):
                q = self._held[node]
                out.extend(self._expire_locked(q))
                if not q:
                    del self._held[node]
            return out

    def _expire_locked(self, q: deque[_Held]) -> list[UpstreamMessage]:
        now = self._now()
        out: list[UpstreamMessage] = []
        while q and q[0].until <= now:
            out.append(self._pop_locked(q))
        return out

    def __len__(self) -> int:
        with self._lock:
            return sum(len(q) for q in self._held.values())
