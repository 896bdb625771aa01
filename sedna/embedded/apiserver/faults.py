"""Fault injection, so tests can prove that clients survive a misbehaving server.

Set from the test thread, read on the server's loop thread; each rule is replaced as
a whole (no partial updates), guarded by a lock for the counters.
"""

from __future__ import annotations

import random
import sqlite3
import threading
from dataclasses import dataclass, field


@dataclass
class FailureRule:
    """Fail matching requests: with ``probability`` or every ``every``-th match."""

    code: int = 500
    probability: float = 0.0
    every: int = 0
    verbs: frozenset[str] = frozenset()
    resources: frozenset[str] = frozenset()
    remaining: int | None = None
    seen: int = 0
    after_commit: bool = False

    def matches(self, verb: str, resource: str) -> bool:
        """Whether this rule applies to the request at all."""
        return (not self.verbs or verb in self.verbs) and (
            not self.resources or resource in self.resources
        )


@dataclass
class FaultInjector:
    """Failure, latency and watch faults; everything off until set, ``reset()`` clears.

    Verbs are kube's: get, list, watch, create, update, patch, delete. Resources are
    plurals (``pods``, ``incrementallearningjobs``), optionally with a subresource
    (``pods/status``) — a rule on ``pods`` also matches ``pods/status``.
    """

    rules: list[FailureRule] = field(default_factory=list)
    latency: float = 0.0
    latency_verbs: frozenset[str] = frozenset()
    watch_close_after: int | None = None
    gone_next_watches: int = 0
    compact_requested: bool = False
    injected: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _rng: random.Random = field(default_factory=lambda: random.Random(0))

    def fail(
        self,
        code: int = 500,
        *,
        probability: float = 0.0,
        every: int = 0,
        verbs: tuple[str, ...] | list[str] | set[str] = (),
        resources: tuple[str, ...] | list[str] | set[str] = (),
        count: int | None = None,
        after_commit: bool = False,
    ) -> FailureRule:
        """Fail matching requests with ``code`` (500, 429, 409, ...).

        ``probability`` fails a random share, ``every=N`` the N-th, 2N-th ...; with neither,
        every match fails. ``count`` limits how many failures this rule injects.
        ``after_commit`` does the write first and then answers with the error, as
        kube-apiserver's 504 after a slow but successful etcd write: the client cannot
        tell whether its create happened.
        """
        rule = FailureRule(
            code=code,
            probability=probability,
            every=every,
            verbs=frozenset(verbs),
            resources=frozenset(resources),
            remaining=count,
            after_commit=after_commit,
        )
        with self._lock:
            self.rules.append(rule)
        return rule

    def lose_responses(
        self,
        code: int = 504,
        *,
        probability: float = 0.0,
        every: int = 0,
        verbs: tuple[str, ...] | list[str] | set[str] = (),
        resources: tuple[str, ...] | list[str] | set[str] = (),
        count: int | None = None,
    ) -> FailureRule:
        """`fail(..., after_commit=True)`: carry out matching requests but answer ``code``,
        as a proxy timing out would."""
        return self.fail(
            code,
            probability=probability,
            every=every,
            verbs=verbs,
            resources=resources,
            count=count,
            after_commit=True,
        )

    def add_latency(self, seconds: float, verbs: tuple[str, ...] = ()) -> None:
        """Delay every (matching) request by ``seconds``."""
        self.latency = seconds
        self.latency_verbs = frozenset(verbs)

    def close_watches_after(self, n: int | None) -> None:
        """End every watch stream after it has sent ``n`` events (None: never)."""
        self.watch_close_after = n

    def gone_for_next_watches(self, n: int = 1) -> None:
        """Answer the next ``n`` watches that resume from a resourceVersion with 410."""
        with self._lock:
            self.gone_next_watches += n

    def compact(self) -> None:
        """Drop all retained watch history: any watch from an older rv gets 410."""
        self.compact_requested = True

    def reset(self) -> None:
        """Back to a well-behaved server."""
        with self._lock:
            self.rules.clear()
            self.latency = 0.0
            self.latency_verbs = frozenset()
            self.watch_close_after = None
            self.gone_next_watches = 0
            self.compact_requested = False

    # ---- server side ---------------------------------------------------------------
    def check(self, verb: str, resource: str, *, after_commit: bool = False) -> int | None:
        """The error code to inject for this request, if any (before the operation, or
        with ``after_commit`` after it)."""
        if not self.rules:
            return None
        with self._lock:
            for rule in self.rules:
                if rule.after_commit != after_commit:
                    continue
                if not rule.matches(verb, resource) and not rule.matches(
                    verb, resource.split("/")[0]
                ):
                    continue
                if rule.remaining is not None and rule.remaining <= 0:
                    continue
                rule.seen += 1
                if rule.every:
                    hit = rule.seen % rule.every == 0
                elif rule.probability:
                    hit = self._rng.random() < rule.probability
                else:
                    hit = True
                if hit:
                    if rule.remaining is not None:
                        rule.remaining -= 1
                    self.injected += 1
                    return rule.code
        return None

    def delay_for(self, verb: str) -> float:
        """Injected latency for a request of this verb."""
        if self.latency and (not self.latency_verbs or verb in self.latency_verbs):
            return self.latency
        return 0.0

    def take_gone(self) -> bool:
        """Consume one forced-410 token."""
        if not self.gone_next_watches:
            return False
        with self._lock:
            if self.gone_next_watches > 0:
                self.gone_next_watches -= 1
                return True
        return False


@dataclass
class StoreWriteFault:
    """Make the store's SQLite writes fail as a full disk does (inside the transaction).

    Kept apart from the request rules: it acts below the API, on every write the store
    makes (clients', the garbage collector's, housekeeping's), as the disk would.
    """

    message: str | None = None
    # writes still let through before the failures start
    allowed: int = 0

    def fail_writes(
        self, message: str | None = "database or disk is full", *, after: int = 0
    ) -> None:
        """Fail every store write (after ``after`` more succeed) with
        ``sqlite3.OperationalError(message)``; None: stop failing."""
        self.allowed = after
        self.message = message

    def __call__(self) -> None:
        message = self.message
        if message is None:
            return
        if self.allowed > 0:
            self.allowed -= 1
            return
        raise sqlite3.OperationalError(message)
