"""A shared informer: one list+watch feeding a cache and any number of handlers.

Follows client-go's reflector and shared informer:

* list (paged), then watch from the list's resourceVersion; every event and
  bookmark advances the resourceVersion, and a dropped stream re-watches from it;
* ``410 Gone`` (HTTP status or an ``ERROR`` event) relists and delivers only the
  differences; objects that vanished during the gap come as
  ``DeletedFinalStateUnknown`` tombstones carrying the last known state;
* a stream silent longer than ``inactivity_timeout`` is restarted: the server is
  asked to end it earlier (``timeoutSeconds``) and the socket read timeout catches
  connections that died without a FIN;
* failures back off 0.8 s doubling to 30 s with jitter, waiting on the injectable
  clock; a stream that delivered events resets the backoff;
* the cache is updated first, then a notification is queued; one dispatch thread
  per informer calls the handlers in order, so a slow handler delays other
  handlers but never the watch (client-go's processorListener buffer);
* handlers added late receive the current contents as adds; a periodic resync
  re-delivers ``on_update(obj, obj)`` from the cache without any API call.

Two threads per started informer: ``informer-<resource>`` (list/watch) and
``informer-<resource>-dispatch``; ``stop()`` joins both.

A metadata-only informer (client-go's ``metadatainformer``) lists and watches with
``metadata_only=True``: its cache holds ``PartialObjectMetadata`` objects (apiVersion
``meta.k8s.io/v1``, only ``metadata``), for consumers that need names, labels, owners
or deletions but not spec and status. Everything above works unchanged on them.

A ``transform`` (client-go's ``SetTransform``) is applied to every listed and watched
object before it is cached or handed to a handler, e.g. to drop ``managedFields``
(see ``transforms``); the cache and the handlers only ever see transformed objects.
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from loguru import logger

from ..clock import Clock, RealClock
from ..kube.client import ResourceClient
from ..kube.errors import (
    ApiError,
    Gone,
    NotFound,
    ReadTimeout,
    TransportError,
    error_from_status,
)
from .backoff import Backoff, BackoffPolicy
from .handlers import EventHandler
from .keys import DeletedFinalStateUnknown, meta_namespace_key
from .mutation import MutationDetector
from .store import (
    NAMESPACE_INDEX,
    OWNER_UID_INDEX,
    Indexer,
    IndexFunc,
    Lister,
    controller_owner_uids,
    namespace_index,
)
from .transforms import Transform

__all__ = ["HandlerRegistration", "InformerOptions", "InformerStats", "SharedInformer"]

Obj = Mapping[str, Any]

_ADD: Final = 0
_UPDATE: Final = 1
_DELETE: Final = 2
_SYNCED: Final = 3

# A watch that ends cleanly without events sooner than this is treated as a
# failure (client-go's "very short watch"), so a server that closes every
# watch at once does not turn the reflector into a busy loop.
_SHORT_WATCH = 1.0


@dataclass(frozen=True)
class InformerOptions:
    """Tuning knobs; the defaults are client-go's where it has one, except ``page_size``.

    ``page_size`` is 100, not client-go's 500: a page is decoded whole before its objects
    are transformed, and the allocator keeps that peak as resident memory (with 10 000
    worker pods, 500 per page cost 0.9 KB more RSS per cached pod than 100; the extra
    requests at startup are 1 per 100 objects).
    """

    inactivity_timeout: float = 300.0
    backoff: BackoffPolicy = field(default_factory=BackoffPolicy)
    page_size: int = 100
    mutation_check_interval: float = 10.0
    join_timeout: float = 10.0
    allow_bookmarks: bool = True


@dataclass
class InformerStats:
    """Counters for tests and debugging (written by the informer's own threads)."""

    lists: int = 0
    watches: int = 0
    events: int = 0
    bookmarks: int = 0
    relists_after_gone: int = 0
    errors: int = 0
    backoffs: int = 0
    resyncs: int = 0
    malformed: int = 0
    handler_errors: int = 0


class HandlerRegistration:
    """Returned by ``add_event_handler``; synced once its initial adds were delivered."""

    def __init__(self, handler: EventHandler) -> None:
        self.handler = handler
        self._synced = threading.Event()
        self.removed = False

    def has_synced(self) -> bool:
        """True when this handler has been called for every initial object."""
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Block (real time) until ``has_synced()``; False on timeout."""
        return self._synced.wait(timeout)


_Note = tuple[int, Any, Any, tuple[HandlerRegistration, ...]]


def _resource_version(obj: Obj) -> str:
    meta = obj.get("metadata")
    if isinstance(meta, Mapping):
        rv = meta.get("resourceVersion")
        if isinstance(rv, str):
            return rv
    return ""


class SharedInformer:
    """List+watch of one resource (in one namespace or all) shared by many handlers."""

    def __init__(
        self,
        client: ResourceClient,
        *,
        namespace: str = "",
        resync_period: float = 0.0,
        clock: Clock | None = None,
        options: InformerOptions | None = None,
        detect_mutations: bool = False,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
        transform: Transform | None = None,
    ) -> None:
        self.client = client
        self.metadata_only = metadata_only
        self.transform = transform
        self.resource = client.res
        self.namespace = namespace if client.res.namespaced else ""
        self.resync_period = resync_period
        self.clock: Clock = clock or RealClock()
        self.options = options or InformerOptions()
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.name = self.resource.group_resource + (f"@{self.namespace}" if self.namespace else "")
        # logs and thread names tell a metadata-only informer from a full one
        self._label = self.name + ("[metadata]" if metadata_only else "")
        self.stats = InformerStats()

        self._indexer = Indexer(
            {NAMESPACE_INDEX: namespace_index, OWNER_UID_INDEX: controller_owner_uids}
        )
        self._lister = Lister(self._indexer, client.res.namespaced)
        self._detector = MutationDetector(self._label) if detect_mutations else None

        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._queue: deque[_Note] = deque()
        self._listeners: list[HandlerRegistration] = []
        self._synced = threading.Event()
        self._last_rv = ""
        self._started = False
        self._stopping = False
        self._stream: Any = None
        self._threads: list[threading.Thread] = []
        self._rng = random.Random()
        self._backoff = Backoff(self.clock, self.options.backoff)

    # -- public API ----------------------------------------------------------

    @property
    def lister(self) -> Lister:
        """Read view of the cache (objects are shared: deepcopy before changing)."""
        return self._lister

    @property
    def indexer(self) -> Indexer:
        """The cache itself, for index queries beyond the lister's."""
        return self._indexer

    def get_or_read(self, namespace: str | None, name: str) -> Obj | None:
        """The cached object, else the server's; None only when the server has none.

        A cache miss is not proof of absence: an event of one resource can reach a
        handler before another resource's cache has synced (start, restart), and an
        LC's report can beat the cache. API errors other than 404 are raised.
        """
        obj = self._lister.get(namespace, name)
        if obj is not None:
            return obj
        try:
            return self.client.get(namespace, name, metadata_only=self.metadata_only)
        except NotFound:
            return None

    def add_indexer(self, name: str, fn: IndexFunc) -> None:
        """Add a secondary index (queried with ``lister.by_index``); cheap at any time."""
        self._indexer.add_indexer(name, fn)

    def has_synced(self) -> bool:
        """True once the first list is in the cache."""
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Block until synced (real time: it waits for I/O, not for a delay)."""
        return self._synced.wait(timeout)

    @property
    def last_sync_resource_version(self) -> str:
        """The resourceVersion a re-watch would resume from."""
        return self._last_rv

    @property
    def is_started(self) -> bool:
        """Whether ``start()`` was called."""
        return self._started

    def add_event_handler(self, handler: EventHandler) -> HandlerRegistration:
        """Register a handler; if already synced it first gets every cached object as an add."""
        reg = HandlerRegistration(handler)
        with self._cond:
            self._listeners.append(reg)
            if self._synced.is_set():
                targets = (reg,)
                for obj in self._indexer.values():
                    self._queue.append((_ADD, obj, None, targets))
                self._queue.append((_SYNCED, None, None, targets))
                self._cond.notify_all()
        return reg

    def remove_event_handler(self, reg: HandlerRegistration) -> None:
        """Stop calling a handler (notifications already queued for it are dropped)."""
        with self._cond:
            reg.removed = True
            if reg in self._listeners:
                self._listeners.remove(reg)

    def start(self, *, after: threading.Event | None = None) -> None:
        """Start the list/watch and dispatch threads (idempotent).

        With ``after``, the first list waits until that event is set (the factory starts
        all its informers' threads first, then lets them list: see
        ``SharedInformerFactory.start``).
        """
        with self._lock:
            if self._started:
                return
            self._started = True
            self._threads = [
                threading.Thread(
                    target=self._run, args=(after,), name=f"informer-{self._label}", daemon=True
                ),
                threading.Thread(
                    target=self._dispatch_loop, name=f"informer-{self._label}-dispatch", daemon=True
                ),
            ]
        for t in self._threads:
            t.start()

    def request_stop(self) -> None:
        """Ask both threads to end without waiting (``stop`` = this + join)."""
        with self._cond:
            self._stopping = True
            stream = self._stream
            self._cond.notify_all()
        if stream is not None:
            stream.close()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the threads after ``request_stop``; False if one is still running."""
        budget = self.options.join_timeout if timeout is None else timeout
        deadline = RealClock().now() + budget
        for t in self._threads:
            t.join(max(0.0, deadline - RealClock().now()))
        alive = [t.name for t in self._threads if t.is_alive()]
        if alive:
            logger.warning("informer {}: threads did not stop in time: {}", self._label, alive)
            return False
        return True

    def stop(self, timeout: float | None = None) -> bool:
        """Stop and join both threads; True when they ended within ``timeout``."""
        self.request_stop()
        return self.join(timeout)

    def check_mutations(self) -> list[str]:
        """Run the mutation detector now (no-op when disabled); return new failures."""
        if self._detector is None:
            return []
        return self._detector.check(self._is_current)

    @property
    def mutation_detector(self) -> MutationDetector | None:
        """The detector when enabled."""
        return self._detector

    # -- list / watch thread --------------------------------------------------------

    def _run(self, after: threading.Event | None = None) -> None:
        if after is not None:
            after.wait()
        need_list = True
        gone_streak = 0
        while not self._stopping:
            try:
                if need_list:
                    self._list_and_replace()
                    need_list = False
                events, clean, duration = self._watch_once()
                gone_streak = 0
                if self._stopping:
                    break
                if events:
                    # Progress: whatever ended the stream, resume at once.
                    self._backoff.reset()
                    continue
                if clean and duration >= _SHORT_WATCH:
                    continue
                logger.debug("informer {}: watch ended without events, backing off", self._label)
                self._wait_backoff()
            except Gone as exc:
                self.stats.relists_after_gone += 1
                gone_streak += 1
                need_list = True
                logger.info(
                    "informer {}: resourceVersion {} is gone ({}); relisting",
                    self._label,
                    self._last_rv,
                    exc.message or exc.reason,
                )
                if gone_streak > 1:
                    self._wait_backoff()
            except ReadTimeout:
                # Silent for the whole inactivity timeout: the connection is
                # presumed dead. Restarting costs one request; no backoff needed.
                logger.info(
                    "informer {}: watch silent for {:.0f}s, restarting",
                    self._label,
                    self.options.inactivity_timeout,
                )
            except ApiError as exc:
                self.stats.errors += 1
                if self._stopping:
                    break
                logger.warning("informer {}: list/watch failed: {}", self._label, exc)
                self._wait_backoff()
            except Exception as exc:
                self.stats.errors += 1
                if self._stopping:
                    break
                logger.opt(exception=exc).error(
                    "informer {}: unexpected list/watch error", self._label
                )
                self._wait_backoff()

    def _wait_backoff(self) -> None:
        delay = self._backoff.next_delay()
        self.stats.backoffs += 1
        deadline = self.clock.now() + delay
        with self._cond:
            while not self._stopping and self.clock.now() < deadline:
                self.clock.condition_wait_until(self._cond, deadline)

    def _list_and_replace(self) -> None:
        items: list[Any] = []
        rv = ""
        token: str | None = None
        limit: int | None = self.options.page_size or None
        while True:
            try:
                page = self.client.list(
                    self.namespace or None,
                    label_selector=self.label_selector,
                    field_selector=self.field_selector,
                    limit=limit,
                    continue_token=token,
                    metadata_only=self.metadata_only,
                )
            except Gone:
                if token is None:
                    raise
                # The continue token expired mid-list: start over in one piece.
                items, rv, token, limit = [], "", None, None
                continue
            self.stats.lists += 1
            page_items = page.get("items")
            if isinstance(page_items, list):
                # transformed page by page: the whole list is never held untransformed
                items.extend(self._prepared(item) for item in page_items)
            meta = page.get("metadata")
            meta = meta if isinstance(meta, Mapping) else {}
            if not rv:
                rv = str(meta.get("resourceVersion") or "")
            token = meta.get("continue") or None
            if not token:
                break
        self._replace(items, rv)

    def _replace(self, items: list[Any], rv: str) -> None:
        fresh: dict[str, dict[str, Any]] = {}
        for item in items:
            if not isinstance(item, dict):
                self.stats.malformed += 1
                continue
            try:
                key = meta_namespace_key(item)
            except ValueError as exc:
                self.stats.malformed += 1
                logger.warning("informer {}: skipping a listed object: {}", self._label, exc)
                continue
            fresh[key] = item
        with self._cond:
            targets = tuple(self._listeners)
            notes: list[_Note] = []
            for key, obj in fresh.items():
                old = self._indexer.get(key)
                if old is None:
                    self._put(key, obj)
                    notes.append((_ADD, obj, None, targets))
                elif _resource_version(old) != _resource_version(obj) or (
                    not _resource_version(obj) and old != obj
                ):
                    self._put(key, obj)
                    notes.append((_UPDATE, old, obj, targets))
            for key in self._indexer.keys():  # noqa: SIM118 - a snapshot, we delete
                if key not in fresh:
                    old = self._indexer.delete(key)
                    if old is not None:
                        notes.append((_DELETE, DeletedFinalStateUnknown(key, old), None, targets))
            self._last_rv = rv
            first = not self._synced.is_set()
            if targets:
                self._queue.extend(notes)
                if first:
                    self._queue.extend((_SYNCED, None, None, (t,)) for t in targets)
                self._cond.notify_all()
            if first:
                self._synced.set()
        logger.debug(
            "informer {}: listed {} objects at rv {} ({} changes)",
            self._label,
            len(fresh),
            rv,
            len(notes),
        )

    def _prepared(self, item: Any) -> Any:
        """A listed item as it is cached: kind set (list items of built-in kinds come
        without apiVersion/kind), then transformed."""
        if not isinstance(item, dict):
            return item  # counted as malformed by _replace
        item.setdefault("apiVersion", self.resource.api_version)
        item.setdefault("kind", self.resource.kind)
        return self._transformed(item)

    def _transformed(self, obj: dict[str, Any]) -> dict[str, Any]:
        if self.transform is None:
            return obj
        try:
            return self.transform(obj)
        except Exception as exc:
            # A transform bug must not lose the object: cache it as it came.
            self.stats.handler_errors += 1
            logger.opt(exception=exc).error("informer {}: transform failed", self._label)
            return obj

    def _put(self, key: str, obj: Obj) -> Obj | None:
        if self._detector is not None:
            self._detector.track(key, obj)
        return self._indexer.put(key, obj)

    def _watch_once(self) -> tuple[int, bool, float]:
        inactivity = self.options.inactivity_timeout
        # The server ends the stream cleanly before the client-side read timeout
        # could fire, so the read timeout only trips on dead connections.
        server_timeout = max(1, int(inactivity * self._rng.uniform(0.5, 0.9)))
        # Real time on purpose: this measures the server, not a delay of ours.
        started = time.monotonic()
        stream = self.client.watch(
            self.namespace or None,
            resource_version=self._last_rv or None,
            timeout_seconds=server_timeout,
            allow_bookmarks=self.options.allow_bookmarks,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            read_timeout=inactivity,
            metadata_only=self.metadata_only,
        )
        self.stats.watches += 1
        with self._cond:
            if self._stopping:
                stream.close()
                return 0, True, 0.0
            self._stream = stream
        events = 0
        clean = True
        try:
            for event in stream:
                if self._handle_event(event):
                    events += 1
        except TransportError as exc:
            if not events:
                raise
            # Progress was made: resume from the last resourceVersion at once.
            clean = False
            logger.info(
                "informer {}: watch dropped after {} events ({}); resuming at rv {}",
                self._label,
                events,
                exc.reason,
                self._last_rv,
            )
        finally:
            with self._cond:
                self._stream = None
            stream.close()
        return events, clean, time.monotonic() - started

    def _handle_event(self, event: Mapping[str, Any]) -> bool:
        typ = event.get("type")
        obj = event.get("object")
        if typ == "ERROR":
            raise error_from_status(500, obj if isinstance(obj, Mapping) else None, "WatchError")
        if not isinstance(obj, dict):
            self.stats.malformed += 1
            logger.warning("informer {}: {} event without an object", self._label, typ)
            return False
        rv = _resource_version(obj)
        if typ == "BOOKMARK":
            self.stats.bookmarks += 1
            if rv:
                self._last_rv = rv
            return False
        try:
            key = meta_namespace_key(obj)
        except ValueError as exc:
            self.stats.malformed += 1
            logger.warning("informer {}: skipping a {} event: {}", self._label, typ, exc)
            if rv:
                self._last_rv = rv
            return False
        obj = self._transformed(obj)
        with self._cond:
            if typ == "ADDED" or typ == "MODIFIED":
                old = self._put(key, obj)
                note: _Note = (_ADD, obj, None, ()) if old is None else (_UPDATE, old, obj, ())
            elif typ == "DELETED":
                self._indexer.delete(key)
                note = (_DELETE, obj, None, ())
            else:
                logger.warning("informer {}: ignoring a {!r} event", self._label, typ)
                return False
            if rv:
                self._last_rv = rv
            self.stats.events += 1
            if self._listeners:
                self._queue.append((note[0], note[1], note[2], tuple(self._listeners)))
                self._cond.notify()
        return True

    # -- dispatch thread ------------------------------------------------------------

    def _dispatch_loop(self) -> None:
        period = self.resync_period
        check_every = self.options.mutation_check_interval if self._detector else 0.0
        next_resync: float | None = None
        next_check = self.clock.now() + check_every if check_every else None
        while True:
            run_check = False
            with self._cond:
                while True:
                    if self._stopping:
                        return
                    now = self.clock.now()
                    if period > 0 and self._synced.is_set():
                        if next_resync is None:
                            next_resync = now + period
                        elif now >= next_resync:
                            self._enqueue_resync()
                            next_resync = now + period
                    if next_check is not None and now >= next_check:
                        next_check = now + check_every
                        run_check = True
                        break
                    if self._queue:
                        break
                    deadlines = [d for d in (next_resync, next_check) if d is not None]
                    if deadlines:
                        self.clock.condition_wait_until(self._cond, min(deadlines))
                    else:
                        self._cond.wait()
                note = self._queue.popleft() if not run_check else None
            if run_check:
                self.check_mutations()
            elif note is not None:
                self._deliver(note)

    def _enqueue_resync(self) -> None:
        targets = tuple(self._listeners)
        if not targets:
            return
        self.stats.resyncs += 1
        for obj in self._indexer.values():
            self._queue.append((_UPDATE, obj, obj, targets))

    def _deliver(self, note: _Note) -> None:
        op, a, b, targets = note
        for reg in targets:
            if reg.removed:
                continue
            try:
                if op == _ADD:
                    reg.handler.on_add(a)
                elif op == _UPDATE:
                    reg.handler.on_update(a, b)
                elif op == _DELETE:
                    reg.handler.on_delete(a)
                else:
                    reg._synced.set()
            except Exception as exc:
                # A handler bug must not stop delivery to the others.
                self.stats.handler_errors += 1
                logger.opt(exception=exc).error(
                    "informer {}: event handler {!r} failed", self._label, reg.handler
                )

    def _is_current(self, key: str, obj: Obj) -> bool:
        return self._indexer.get(key) is obj
