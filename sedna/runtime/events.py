"""Kubernetes Events about the objects the GM controls, as `kubectl describe` shows them.

Events are written from a background thread (as client-go's broadcaster does) so a
reconcile never waits on them; repeats of the same event on the same object bump
`count` instead of creating a new Event, like client-go's correlator. Inside
`coalesced_events()` (every controller sync runs in one) the events about one object with one
type and reason become one Event, their messages joined: a sync that creates a job's
Service and three workers writes one SuccessfulCreate naming all four, not four.
Events were half of the GM's requests per job.
"""

from __future__ import annotations

import contextlib
import queue
import random
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from loguru import logger

from sedna.runtime.clock import Clock, RealClock
from sedna.runtime.kube import EVENTS, KubeClient, NotFound

if TYPE_CHECKING:
    from sedna.runtime.metrics import Metrics

NORMAL = "Normal"
WARNING = "Warning"

_STOP = object()
_MAX_NAME = 253  # a DNS subdomain, the longest name an Event may have
MAX_MESSAGE = 1024  # events.k8s.io's limit for a note; longer messages are cut
_JOIN = "; "


@dataclass(frozen=True)
class _Pending:
    involved: dict[str, Any]
    type: str
    reason: str
    message: str


_scope = threading.local()  # the open `coalesced_events()` block of each thread


@contextlib.contextmanager
def coalesced_events() -> Iterator[None]:
    """Within the block, this thread's events about one object with one type and reason
    are written as one Event when the block ends, messages joined by "; " in order (as
    many Events as `MAX_MESSAGE` needs). Nested blocks belong to the outermost one.
    """
    if getattr(_scope, "pending", None) is not None:
        yield
        return
    pending: dict[tuple[int, str, str, str], tuple[EventRecorder, list[_Pending]]] = {}
    _scope.pending = pending
    try:
        yield
    finally:
        _scope.pending = None
        for recorder, events in pending.values():
            for merged in _merge(events):
                recorder._enqueue(merged)


def _merge(events: list[_Pending]) -> Iterator[_Pending]:
    """`events` (one object, type and reason) as few as the message limit allows."""
    first = events[0]
    parts: list[str] = []
    size = 0
    for ev in events:
        extra = len(ev.message) + (len(_JOIN) if parts else 0)
        if parts and size + extra > MAX_MESSAGE:
            yield _Pending(first.involved, first.type, first.reason, _JOIN.join(parts))
            parts, size, extra = [], 0, len(ev.message)
        if ev.message not in parts:  # the same words twice add nothing
            parts.append(ev.message)
            size += extra
    yield _Pending(first.involved, first.type, first.reason, _JOIN.join(parts))


def _rfc3339(clock: Clock) -> str:
    return clock.wall().strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    def __init__(
        self,
        kube: KubeClient,
        *,
        component: str = "sedna-gm",
        metrics: Metrics | None = None,
        clock: Clock | None = None,
        max_pending: int = 10000,
        cache_size: int = 4096,
    ) -> None:
        self._kube = kube
        self._component = component
        self._metrics = metrics
        self._clock = clock or RealClock()
        self._queue: queue.Queue[object] = queue.Queue(maxsize=max_pending)
        self._seen: OrderedDict[tuple[str, str, str, str], tuple[str, str, int]] = OrderedDict()
        self._cache_size = cache_size
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._emitted: dict[tuple[str, str], Any] = {}  # labelled counters, cached
        self._rng = random.Random()

    def event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        """Record an event about `obj` (a resource dict); never blocks, never raises."""
        meta = obj.get("metadata") or {}
        involved = {
            "apiVersion": obj.get("apiVersion", ""),
            "kind": obj.get("kind", ""),
            "name": meta.get("name", ""),
            "namespace": meta.get("namespace", ""),
            "uid": meta.get("uid", ""),
            "resourceVersion": meta.get("resourceVersion", ""),
        }
        if self._metrics is not None:
            counter = self._emitted.get((type_, reason))
            if counter is None:
                counter = self._emitted.setdefault(
                    (type_, reason), self._metrics.events_emitted.labels(type_, reason)
                )
            counter.inc()
        pending = _Pending(involved, type_, reason, message[:MAX_MESSAGE])
        batch = getattr(_scope, "pending", None)
        if batch is not None:
            key = (id(self), involved["uid"] or f"{involved['namespace']}/{involved['name']}",
                   type_, reason)  # fmt: skip
            batch.setdefault(key, (self, []))[1].append(pending)
            return
        self._enqueue(pending)

    def _enqueue(self, pending: _Pending) -> None:
        try:
            self._queue.put_nowait(pending)
        except queue.Full:
            logger.warning(
                "event queue full, dropping event {} on {}",
                pending.reason,
                pending.involved["name"],
            )
        self._ensure_thread()

    def normal(self, obj: Mapping[str, Any], reason: str, message: str) -> None:
        self.event(obj, NORMAL, reason, message)

    def warning(self, obj: Mapping[str, Any], reason: str, message: str) -> None:
        self.event(obj, WARNING, reason, message)

    def flush(self, timeout: float = 5.0) -> None:
        """Wait until every recorded event is written (tests, shutdown)."""
        done = threading.Event()
        self._queue.put(done)
        self._ensure_thread()
        done.wait(timeout)

    def stop(self) -> None:
        thread = self._thread
        if thread is None:
            return
        self._queue.put(_STOP)
        thread.join(timeout=5)
        self._thread = None

    def _ensure_thread(self) -> None:
        if self._thread is not None:
            return
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="event-recorder", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            if isinstance(item, threading.Event):
                item.set()
                continue
            assert isinstance(item, _Pending)
            try:
                self._write(item)
            except Exception as exc:  # an event must never take the GM down
                logger.warning(
                    "cannot write event {} on {}/{}: {}",
                    item.reason,
                    item.involved["namespace"],
                    item.involved["name"],
                    exc,
                )

    def _write(self, ev: _Pending) -> None:
        ns = ev.involved["namespace"] or "default"
        key = (ev.involved["uid"] or ns + "/" + ev.involved["name"], ev.type, ev.reason, ev.message)
        now = _rfc3339(self._clock)
        client = self._kube.resource(EVENTS)
        known = self._seen.get(key)
        if known is not None:
            name, event_ns, count = known
            with contextlib.suppress(NotFound):
                client.patch(event_ns, name, {"count": count + 1, "lastTimestamp": now})
                self._remember(key, (name, event_ns, count + 1))
                return
        # 64 random bits as client-go's hex suffix; uuid4 reads os.urandom per call. The
        # object's part is cut so the name stays within 253 characters: client-go's is not,
        # and an object with a long name got no Event at all (422).
        base = (ev.involved["name"] or "unknown")[: _MAX_NAME - 17].rstrip(".-")
        name = f"{base}.{self._rng.getrandbits(64):016x}"
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": ns},
            "involvedObject": ev.involved,
            "reason": ev.reason,
            "message": ev.message,
            "type": ev.type,
            "count": 1,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "source": {"component": self._component},
            "reportingComponent": self._component,
        }
        client.create(ns, body)
        self._remember(key, (name, ns, 1))

    def _remember(self, key: tuple[str, str, str, str], value: tuple[str, str, int]) -> None:
        self._seen[key] = value
        self._seen.move_to_end(key)
        while len(self._seen) > self._cache_size:
            self._seen.popitem(last=False)
