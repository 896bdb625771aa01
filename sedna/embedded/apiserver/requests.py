"""Which API calls clients made: (user agent, verb, group, resource, namespace).

The GM's RBAC must grant every call the GM makes and nothing else; recording what
reached the server during a test run and comparing it with the RBAC rules proves the
first (a missing verb is a 403 on a real cluster, in production, not in a test).
Distinct calls only, bounded: the set of (agent, verb, resource, namespace) a test
run produces is small, and anything beyond `max_distinct` is counted, not kept.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

__all__ = ["PROCESS_REQUESTS", "ApiCall", "RequestRecorder"]


@dataclass(frozen=True, order=True)
class ApiCall:
    """One kind of request: `resource` may name a subresource (`pods/status`);
    `namespace` is None for cluster-scoped and all-namespace requests."""

    verb: str
    group: str
    resource: str
    namespace: str | None

    def __str__(self) -> str:
        group = self.group or "core"
        where = f" in {self.namespace}" if self.namespace else " (cluster-wide)"
        return f"{self.verb} {group}/{self.resource}{where}"


class RequestRecorder:
    """Distinct calls per user agent; thread-safe (the server's loop records, tests read)."""

    def __init__(self, max_distinct: int = 100_000, *, also: RequestRecorder | None = None) -> None:
        self.max_distinct = max_distinct
        self._also = also
        self.dropped = 0
        self._lock = threading.Lock()
        self._calls: set[tuple[str, ApiCall]] = set()

    def record(
        self, user_agent: str, verb: str, group: str, resource: str, namespace: str | None
    ) -> None:
        entry = (user_agent, ApiCall(verb, group, resource, namespace))
        with self._lock:
            if entry in self._calls:
                return
            if len(self._calls) >= self.max_distinct:
                self.dropped += 1
                return
            self._calls.add(entry)
        if self._also is not None:
            self._also.record(user_agent, verb, group, resource, namespace)

    def calls(self, user_agent_prefix: str = "") -> set[ApiCall]:
        """The distinct calls of clients whose User-Agent starts with the prefix."""
        with self._lock:
            return {c for agent, c in self._calls if agent.startswith(user_agent_prefix)}

    def clear(self) -> None:
        with self._lock:
            self._calls.clear()
            self.dropped = 0


PROCESS_REQUESTS = RequestRecorder()
"""Every server of this process records here too, so a test session can check the calls
made to servers that tests started and stopped on their own (embedded mode, restarts)."""
