"""Caps on open watches, in all and per client, and the counts behind them.

Every open watch costs the server a connection, a task and a queue, so a client that
opens thousands of them takes memory the controllers need. kube-apiserver bounds
requests in flight (``--max-requests-inflight``, answered 429 with Retry-After); a
watch is long-running and escapes that cap there, so here it has caps of its own:
``max_total`` open watches in all and ``max_per_client`` per client, a client being
the pair (bearer token, remote address). Over a cap the new watch is answered 429
with ``Retry-After``, as max-in-flight answers, and informers retry with backoff.

Runs on the server's loop thread; the counts are read from other threads (metrics).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field

from .errors import APIError

DEFAULT_MAX_WATCHES = 4096
DEFAULT_MAX_WATCHES_PER_CLIENT = 1024
# each watch's queue of events not yet written to its client
DEFAULT_WATCH_QUEUE_EVENTS = 1000
DEFAULT_WATCH_QUEUE_BYTES = 16 * 1024 * 1024
RETRY_AFTER_SECONDS = 1


def client_key(authorization: str | None, remote: str | None) -> str:
    """Who opens a watch: a digest of the bearer token (never the token) and the address."""
    digest = hashlib.sha256((authorization or "").encode()).hexdigest()[:12]
    return f"{digest}@{remote or '-'}"


@dataclass
class WatchLimits:
    """Open watches by client, the caps, and what was refused or closed."""

    max_total: int = DEFAULT_MAX_WATCHES
    max_per_client: int = DEFAULT_MAX_WATCHES_PER_CLIENT
    queue_events: int = DEFAULT_WATCH_QUEUE_EVENTS
    queue_bytes: int = DEFAULT_WATCH_QUEUE_BYTES
    open: int = 0
    refused: int = 0
    # watches closed because their client did not keep up (the queue bound was hit)
    closed_slow: int = 0
    # bytes of event JSON queued for all watches together (shared events counted per queue)
    queued_bytes: int = 0
    by_client: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        for name in ("max_total", "max_per_client", "queue_events", "queue_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"watch limit {name} must be at least 1")

    def acquire(self, client: str) -> None:
        """Count a new watch of ``client``; 429 when a cap is reached."""
        if self.open >= self.max_total:
            self._refuse(f"the server has {self.open} watches open, its limit")
        if self.by_client[client] >= self.max_per_client:
            self._refuse(f"this client has {self.by_client[client]} watches open, its limit")
        self.open += 1
        self.by_client[client] += 1

    def release(self, client: str) -> None:
        """A watch of ``client`` ended."""
        self.open -= 1
        left = self.by_client[client] - 1
        if left > 0:
            self.by_client[client] = left
        else:
            del self.by_client[client]

    def _refuse(self, why: str) -> None:
        self.refused += 1
        raise too_many_watches(why)


def too_many_watches(why: str) -> APIError:
    """kube-apiserver's max-in-flight answer: 429, retry after a second."""
    return APIError(
        429,
        "TooManyRequests",
        f"Too many requests, please try again later ({why}).",
        retry_after=RETRY_AFTER_SECONDS,
    )
