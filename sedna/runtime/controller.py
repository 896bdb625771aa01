"""The reconcile loop every feature controller repeats (controller-runtime's Controller).

A feature subclasses `Controller` and implements `sync(key)`; event handlers
call `enqueue(key)`. N worker threads take keys from one `RateLimitingQueue`
(so a key is never synced by two workers at once) and act on the outcome:

| sync outcome                        | queue action                      | result label    |
|-------------------------------------|-----------------------------------|-----------------|
| returns None / `Result()`           | `forget`                          | `success`       |
| `Result(requeue_after=s)`, s > 0    | `forget` + `add_after(s)`         | `requeue_after` |
| `Result(requeue=True)`              | `add_rate_limited` (backoff)      | `requeue`       |
| raises `TemporaryError(delay=s)`    | warn + `forget` + `add_after(s)`  | `requeue_after` |
| raises `TemporaryError()`           | warn + `add_rate_limited`         | `requeue`       |
| raises `PermanentError`             | log + `forget` (no retry)         | `error`         |
| raises `Exception`                  | log + `add_rate_limited`          | `error`         |
| raises other `BaseException`        | log + `add_rate_limited`, panic   | `error`         |
| returns something else              | log + `add_rate_limited`          | `error`         |

`requeue_after` wins over `requeue`, and a non-positive `requeue_after` is
ignored, as in controller-runtime. `done` is always called.

A failed sync also reaches the object, not only the log: given `events` and the
`informer` whose keys it syncs (or a `lookup`: key -> object), the controller writes a Warning Event
on it for every exception (`SyncError`), `TemporaryError` (`SyncRetrying`) and
`PermanentError` (`SyncFailed`), at most one per key and reason every
`event_interval` seconds of its clock (kopf posts one per failure; a retry loop would
then write an Event every backoff step). `kubectl describe` then shows why a job does
not move, which is where an operator looks first.

Why a `BaseException` does not end the worker: in a worker thread, signals
never arrive (Python delivers them to the main thread), so a
`KeyboardInterrupt` or `SystemExit` seen here was raised by the sync itself,
typically `sys.exit()` deep in some library. Letting it propagate would end
the thread *silently* (`threading` ignores `SystemExit`), leaving the
controller one worker short with nothing in the logs. It is logged with its
traceback, counted as a panic (and an error, like controller-runtime's
recovered panics), the key is retried with backoff, and the worker goes on.
Stopping the process is the manager's job, through `stop()`.

Metrics go through `ControllerMetricsProvider`. The `metrics` argument also
accepts a `CollectorRegistry` or any object with a `registry` attribute (the
runtime's `Metrics`): then the prometheus providers of that registry are used
for both the controller and its queue.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from loguru import logger
from prometheus_client import CollectorRegistry, Counter, Histogram

from sedna.runtime.clock import Clock, RealClock
from sedna.runtime.events import coalesced_events
from sedna.runtime.informers import SharedInformer
from sedna.runtime.workqueue import (
    PrometheusWorkqueueMetrics,
    RateLimiter,
    RateLimitingQueue,
    WorkqueueMetricsProvider,
)

__all__ = [
    "Controller",
    "ControllerMetricsProvider",
    "NoopControllerMetrics",
    "PermanentError",
    "PrometheusControllerMetrics",
    "Result",
    "TemporaryError",
]

# controller-runtime's reconcile time buckets.
RECONCILE_BUCKETS: tuple[float, ...] = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7,
    0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15,
    20, 25, 30, 40, 50, 60,
)  # fmt: skip


@dataclass(frozen=True)
class Result:
    """What a sync asks for besides "done": a retry with backoff or a timed look."""

    requeue: bool = False
    requeue_after: float | None = None


class TemporaryError(Exception):
    """Raise from `sync` for a failure that will pass: retried after `delay` seconds.

    Without a delay the key is retried with the queue's backoff. Logged as a warning
    without a traceback: it is expected, not a bug.
    """

    def __init__(self, message: str, delay: float | None = None) -> None:
        super().__init__(message)
        self.delay = delay


class PermanentError(Exception):
    """Raise from `sync` for a failure retrying cannot fix (e.g. an invalid spec).

    The key is not retried until its object changes (an informer event enqueues it).
    """


def _informer_lookup(
    informer: SharedInformer | None,
) -> Callable[[str], Mapping[str, Any] | None] | None:
    if informer is None:
        return None
    res = informer.resource

    def lookup(key: str) -> Mapping[str, Any] | None:
        obj = informer.lister.get_by_key(key)
        if obj is None or obj.get("kind"):
            return obj
        return {**obj, "kind": res.kind, "apiVersion": res.api_version}

    return lookup


class WarningRecorder(Protocol):
    """What the controller needs of an event recorder (`EventRecorder` is one)."""

    def warning(self, obj: Mapping[str, Any], reason: str, message: str) -> None: ...


REASON_ERROR = "SyncError"
REASON_RETRYING = "SyncRetrying"
REASON_FAILED = "SyncFailed"


@runtime_checkable
class ControllerMetricsProvider(Protocol):
    """Where a controller's metrics go. A provider may also have `init_controller(name)`,
    called once per controller, to publish its series at 0 before the first sync."""

    def observe_reconcile(self, controller: str, result: str, seconds: float) -> None:
        """One sync finished with `result` after `seconds` of clock time."""
        ...

    def inc_reconcile_error(self, controller: str) -> None: ...

    def inc_reconcile_panic(self, controller: str) -> None: ...


class _HasRegistry(Protocol):
    @property
    def registry(self) -> CollectorRegistry: ...


# the `result` label values of controller_reconcile_total (controller-runtime's)
RECONCILE_RESULTS = ("success", "error", "requeue", "requeue_after")


class NoopControllerMetrics:
    def observe_reconcile(self, controller: str, result: str, seconds: float) -> None:
        pass

    def inc_reconcile_error(self, controller: str) -> None:
        pass

    def inc_reconcile_panic(self, controller: str) -> None:
        pass


class PrometheusControllerMetrics:
    """controller_reconcile_* families on one registry, shared by all controllers."""

    _by_registry: weakref.WeakKeyDictionary[CollectorRegistry, PrometheusControllerMetrics] = (
        weakref.WeakKeyDictionary()
    )
    _by_registry_lock = threading.Lock()

    @classmethod
    def for_registry(cls, registry: CollectorRegistry) -> PrometheusControllerMetrics:
        """The one provider of `registry` (families cannot be registered twice)."""
        with cls._by_registry_lock:
            provider = cls._by_registry.get(registry)
            if provider is None:
                provider = cls(registry)
            return provider

    def __init__(self, registry: CollectorRegistry) -> None:
        """Register the families on `registry`; prefer `for_registry` to share them."""
        self.reconcile_total = Counter(
            "controller_reconcile_total",
            "Total number of reconciliations per controller",
            ("controller", "result"),
            registry=registry,
        )
        self.reconcile_errors = Counter(
            "controller_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            ("controller",),
            registry=registry,
        )
        self.reconcile_panics = Counter(
            "controller_reconcile_panics_total",
            "Total number of reconciliation panics per controller",
            ("controller",),
            registry=registry,
        )
        self.reconcile_time = Histogram(
            "controller_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ("controller",),
            registry=registry,
            buckets=RECONCILE_BUCKETS,
        )
        # labelled children, cached: `labels()` builds and checks its key on every call
        self._totals: dict[tuple[str, str], Any] = {}
        self._times: dict[str, Any] = {}
        PrometheusControllerMetrics._by_registry.setdefault(registry, self)

    def observe_reconcile(self, controller: str, result: str, seconds: float) -> None:
        total = self._totals.get((controller, result))
        if total is None:
            total = self._totals.setdefault(
                (controller, result), self.reconcile_total.labels(controller, result)
            )
        time_ = self._times.get(controller)
        if time_ is None:
            time_ = self._times.setdefault(controller, self.reconcile_time.labels(controller))
        total.inc()
        time_.observe(seconds)

    def init_controller(self, controller: str) -> None:
        """Every series of `controller` at 0, as controller-runtime does at start.

        A counter with labels has no sample until its first increment, so a dashboard's
        `rate(controller_reconcile_errors_total[5m])` shows No data on a healthy GM
        instead of 0, and an alert on it cannot tell "no errors" from "not scraped".
        """
        self.reconcile_errors.labels(controller=controller)
        self.reconcile_panics.labels(controller=controller)
        for result in RECONCILE_RESULTS:
            self.reconcile_total.labels(controller, result)

    def inc_reconcile_error(self, controller: str) -> None:
        self.reconcile_errors.labels(controller=controller).inc()

    def inc_reconcile_panic(self, controller: str) -> None:
        self.reconcile_panics.labels(controller=controller).inc()


def _resolve_metrics(
    metrics: ControllerMetricsProvider | _HasRegistry | CollectorRegistry | None,
) -> tuple[ControllerMetricsProvider, WorkqueueMetricsProvider | None]:
    if metrics is None:
        return NoopControllerMetrics(), None
    if isinstance(metrics, ControllerMetricsProvider):
        return metrics, None
    registry = metrics if isinstance(metrics, CollectorRegistry) else metrics.registry
    return (
        PrometheusControllerMetrics.for_registry(registry),
        PrometheusWorkqueueMetrics.for_registry(registry),
    )


class Controller:
    """Worker threads around a rate-limited queue of string keys; subclass and `sync`."""

    def __init__(
        self,
        name: str,
        *,
        workers: int = 1,
        queue: RateLimitingQueue[str] | None = None,
        metrics: ControllerMetricsProvider | _HasRegistry | CollectorRegistry | None = None,
        workqueue_metrics: WorkqueueMetricsProvider | None = None,
        rate_limiter: RateLimiter[str] | None = None,
        clock: Clock | None = None,
        events: WarningRecorder | None = None,
        informer: SharedInformer | None = None,
        lookup: Callable[[str], Mapping[str, Any] | None] | None = None,
        event_interval: float = 60.0,
    ) -> None:
        """Build the controller; `queue` defaults to Sedna's 10 s..360 s backoff queue.

        `workqueue_metrics` and `rate_limiter` apply only to the default queue.
        `events` with the `informer` the keys come from (or a `lookup`: key -> object or
        None) turn sync failures into Warning Events on the object, one per key and
        reason per `event_interval` seconds. With `informer`, an object from a list
        (which carries no kind) gets the informer's kind and apiVersion for the Event.
        """
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.name = name
        self.workers = workers
        self.clock: Clock = clock if clock is not None else RealClock()
        self._metrics, registry_wq_metrics = _resolve_metrics(metrics)
        init = getattr(self._metrics, "init_controller", None)  # optional for a provider
        if callable(init):
            init(name)
        if queue is None:
            queue = RateLimitingQueue(
                name,
                rate_limiter=rate_limiter,
                clock=self.clock,
                metrics=workqueue_metrics if workqueue_metrics is not None else registry_wq_metrics,
            )
        self.queue: RateLimitingQueue[str] = queue
        self._threads: list[threading.Thread] = []
        self._abandon = False
        self._started = False
        self._state_lock = threading.Lock()
        self._events = events
        self._lookup = lookup if lookup is not None else _informer_lookup(informer)
        self._event_interval = event_interval
        self._last_event: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._event_lock = threading.Lock()

    # -- for subclasses ----------------------------------------------------

    def sync(self, key: str) -> Result | None:
        """Move the object named by `key` one step toward its spec; idempotent."""
        raise NotImplementedError

    # -- feeding the queue -------------------------------------------------

    def enqueue(self, key: str) -> None:
        self.queue.add(key)

    def enqueue_after(self, key: str, delay: float) -> None:
        self.queue.add_after(key, delay)

    def enqueue_rate_limited(self, key: str) -> None:
        self.queue.add_rate_limited(key)

    # -- lifecycle ---------------------------------------------------------

    def retry_waiting(self) -> int:
        """Sync now every key waiting out a backoff or a delay; returns how many."""
        return self.queue.flush_waiting()

    def run(self) -> None:
        """Start the worker threads and return."""
        _LIVE.add(self)
        with self._state_lock:
            if self._started:
                raise RuntimeError(f"controller {self.name} already started")
            if self.queue.shutting_down():
                raise RuntimeError(f"controller {self.name} was stopped")
            self._started = True
            for i in range(self.workers):
                thread = threading.Thread(
                    target=self._worker, name=f"{self.name}-worker-{i}", daemon=True
                )
                self._threads.append(thread)
                thread.start()
        logger.debug("controller {} started {} workers", self.name, self.workers)

    def stop(self, drain: bool = True, timeout: float | None = None) -> None:
        """Stop accepting keys and join the workers.

        `drain=True` syncs every key already queued (pending delayed keys are
        dropped); `drain=False` lets running syncs finish and drops the rest.
        Callable from a sync: that worker is then not joined.
        """
        if not drain:
            self._abandon = True
        _LIVE.discard(self)
        self.queue.shut_down()
        current = threading.current_thread()
        for thread in self._threads:
            if thread is not current:
                thread.join(timeout)
        alive = [t.name for t in self._threads if t.is_alive() and t is not current]
        if alive:
            logger.warning("controller {}: workers still running after stop: {}", self.name, alive)

    def is_running(self) -> bool:
        """Whether any worker thread is alive."""
        return any(t.is_alive() for t in self._threads)

    def wait_idle(self, timeout: float | None = 5.0) -> bool:
        """Block (real time) until no key is queued, processing or due; for tests.

        Keys waiting for a future time on the clock do not count.
        """
        return self.queue.wait_idle(timeout)

    # -- the loop ----------------------------------------------------------

    def _worker(self) -> None:
        queue = self.queue
        while True:
            key, shutdown = queue.get()
            if shutdown or key is None:
                return
            try:
                if not self._abandon:
                    # Every line logged during the sync carries the job and its kind
                    # (a controller is named after its kind) as JSON fields.
                    with logger.contextualize(controller=self.name, kind=self.name, job=key):
                        self._process(key)
            except BaseException as exc:  # the loop itself failed (e.g. a metrics hook)
                logger.opt(exception=exc).error(
                    "controller {}: internal error handling key {!r}", self.name, key
                )
            finally:
                queue.done(key)

    def _process(self, key: str) -> None:
        start = self.clock.now()
        try:
            with coalesced_events():  # one Event for the sync's several about one object
                outcome = self.sync(key)
        except TemporaryError as exc:
            label = self._temporary(key, exc)
        except PermanentError as exc:
            logger.bind(controller=self.name, key=key).error(
                "controller {}: sync of {!r} failed for good: {}", self.name, key, exc
            )
            self._metrics.inc_reconcile_error(self.name)
            self._warn(key, REASON_FAILED, f"{exc}; not retried until the object changes")
            label = "error"
            self.queue.forget(key)
        except Exception as exc:
            logger.opt(exception=exc).bind(controller=self.name, key=key).error(
                "controller {}: sync of {!r} failed: {!r}", self.name, key, exc
            )
            self._metrics.inc_reconcile_error(self.name)
            self._warn(key, REASON_ERROR, f"sync failed: {type(exc).__name__}: {exc}; retrying")
            label = "error"
            self.queue.add_rate_limited(key)
        except BaseException as exc:
            logger.opt(exception=exc).bind(controller=self.name, key=key).critical(
                "controller {}: sync of {!r} raised {!r}; treated as a crash, worker goes on",
                self.name,
                key,
                exc,
            )
            self._metrics.inc_reconcile_panic(self.name)
            self._metrics.inc_reconcile_error(self.name)
            label = "error"
            self.queue.add_rate_limited(key)
        else:
            label = self._apply(key, outcome)
        self._metrics.observe_reconcile(self.name, label, self.clock.now() - start)

    def _temporary(self, key: str, exc: TemporaryError) -> str:
        delay = exc.delay if exc.delay is not None and exc.delay > 0 else None
        when = f"in {delay:g} s" if delay is not None else "with backoff"
        logger.bind(controller=self.name, key=key).warning(
            "controller {}: sync of {!r} will be retried {}: {}", self.name, key, when, exc
        )
        self._warn(key, REASON_RETRYING, f"{exc}; retrying {when}")
        if delay is None:
            self.queue.add_rate_limited(key)
            return "requeue"
        self.queue.forget(key)
        self.queue.add_after(key, delay)
        return "requeue_after"

    def _warn(self, key: str, reason: str, message: str) -> None:
        """A Warning Event on the key's object, rate-limited; never raises."""
        if self._events is None or self._lookup is None:
            return
        now = self.clock.now()
        with self._event_lock:
            last = self._last_event.get((key, reason))
            if last is not None and now - last < self._event_interval:
                return
            self._last_event[(key, reason)] = now
            self._last_event.move_to_end((key, reason))
            while len(self._last_event) > 4096:  # bounded: keys come and go
                self._last_event.popitem(last=False)
        try:
            obj = self._lookup(key)
            if obj is not None:
                self._events.warning(obj, reason, message)
        except Exception as exc:
            logger.warning(
                "controller {}: cannot record an event for {!r}: {}", self.name, key, exc
            )

    def _apply(self, key: str, outcome: object) -> str:
        if outcome is None:
            self.queue.forget(key)
            return "success"
        if not isinstance(outcome, Result):
            logger.bind(controller=self.name, key=key).error(
                "controller {}: sync of {!r} returned {!r}, not a Result or None",
                self.name,
                key,
                outcome,
            )
            self._metrics.inc_reconcile_error(self.name)
            self.queue.add_rate_limited(key)
            return "error"
        if outcome.requeue_after is not None and outcome.requeue_after > 0:
            self.queue.forget(key)
            self.queue.add_after(key, outcome.requeue_after)
            return "requeue_after"
        if outcome.requeue:
            self.queue.add_rate_limited(key)
            return "requeue"
        self.queue.forget(key)
        return "success"


_LIVE: weakref.WeakSet[Controller] = weakref.WeakSet()


def retry_all_waiting() -> int:
    """Every running controller of this process syncs now the keys waiting out a
    backoff (`Controller.retry_waiting`); returns how many keys moved."""
    return sum(c.retry_waiting() for c in list(_LIVE))
