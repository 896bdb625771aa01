"""Workqueue metric hooks, named as controller-runtime names them.

The queue talks to metrics only through `WorkqueueMetricsProvider` (shaped
like client-go's `MetricsProvider`), so the queue has no hard dependency on
prometheus and tests can count calls. `PrometheusWorkqueueMetrics` creates the
seven metric families on a given `CollectorRegistry` once, and hands each
named queue its labelled children; one provider serves every queue of a
runtime (the lead's `Metrics` object should own one and pass it to queues
instead of creating these names itself, or the registry would see them twice).

Unfinished work and the longest running processor are computed at collect
(scrape) time rather than by client-go's 500 ms ticker: no extra thread per
queue, no extra waiter on a fake clock, and the value is exact when read. The
gauge is given a function (`set_function`) that reads the queue's processing
start times under the queue's lock; it holds the queue weakly, so a discarded
queue reads as zero instead of being kept alive by the registry.

Depth counts dirty items (as client-go does), which includes an item re-added
while it is processing; adds count only adds that made an item dirty.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from sedna.runtime.clock import Clock

__all__ = [
    "CounterMetric",
    "GaugeMetric",
    "HistogramMetric",
    "NoopWorkqueueMetrics",
    "PrometheusWorkqueueMetrics",
    "ScrapeGaugeMetric",
    "WorkqueueMetrics",
    "WorkqueueMetricsProvider",
]

T = TypeVar("T", bound=Hashable)

# controller-runtime's workqueue buckets: 10 ns .. 1000 s.
WORKQUEUE_BUCKETS: tuple[float, ...] = tuple(1e-8 * 10**i for i in range(12))


class GaugeMetric(Protocol):
    def inc(self) -> None: ...
    def dec(self) -> None: ...


class CounterMetric(Protocol):
    def inc(self) -> None: ...


class HistogramMetric(Protocol):
    def observe(self, amount: float) -> None: ...


class ScrapeGaugeMetric(Protocol):
    """A gauge whose value is computed by `fn` whenever it is read."""

    def set_function(self, f: Callable[[], float]) -> None: ...


class WorkqueueMetricsProvider(Protocol):
    """Makes the metric objects of one named queue (client-go's MetricsProvider)."""

    def new_depth_metric(self, name: str) -> GaugeMetric: ...
    def new_adds_metric(self, name: str) -> CounterMetric: ...
    def new_latency_metric(self, name: str) -> HistogramMetric: ...
    def new_work_duration_metric(self, name: str) -> HistogramMetric: ...
    def new_unfinished_work_seconds_metric(self, name: str) -> ScrapeGaugeMetric: ...
    def new_longest_running_processor_seconds_metric(self, name: str) -> ScrapeGaugeMetric: ...
    def new_retries_metric(self, name: str) -> CounterMetric: ...


# A shorter name for the type of the queue's `metrics` argument.
WorkqueueMetrics = WorkqueueMetricsProvider


class _NoopMetric:
    def inc(self) -> None:
        pass

    def dec(self) -> None:
        pass

    def observe(self, amount: float) -> None:
        pass

    def set_function(self, f: Callable[[], float]) -> None:
        pass


_NOOP = _NoopMetric()


class NoopWorkqueueMetrics:
    """Discards everything; queues given it skip their bookkeeping entirely."""

    def new_depth_metric(self, name: str) -> GaugeMetric:
        return _NOOP

    def new_adds_metric(self, name: str) -> CounterMetric:
        return _NOOP

    def new_latency_metric(self, name: str) -> HistogramMetric:
        return _NOOP

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        return _NOOP

    def new_unfinished_work_seconds_metric(self, name: str) -> ScrapeGaugeMetric:
        return _NOOP

    def new_longest_running_processor_seconds_metric(self, name: str) -> ScrapeGaugeMetric:
        return _NOOP

    def new_retries_metric(self, name: str) -> CounterMetric:
        return _NOOP


class PrometheusWorkqueueMetrics:
    """The workqueue_* families on one registry, labelled by queue name."""

    _by_registry: weakref.WeakKeyDictionary[CollectorRegistry, PrometheusWorkqueueMetrics] = (
        weakref.WeakKeyDictionary()
    )
    _by_registry_lock = threading.Lock()

    @classmethod
    def for_registry(cls, registry: CollectorRegistry) -> PrometheusWorkqueueMetrics:
        """The one provider of `registry`, created on first use.

        Lets every queue of a runtime be handed just the registry without the
        families being registered twice (which prometheus_client refuses).
        """
        with cls._by_registry_lock:
            provider = cls._by_registry.get(registry)
            if provider is None:
                provider = cls(registry)  # registers itself
            return provider

    def __init__(self, registry: CollectorRegistry) -> None:
        """Register the families on `registry`; prefer `for_registry` to share them."""
        labels = ("name",)
        self.depth = Gauge(
            "workqueue_depth", "Current depth of workqueue", labels, registry=registry
        )
        self.adds = Counter(
            "workqueue_adds_total",
            "Total number of adds handled by workqueue",
            labels,
            registry=registry,
        )
        self.latency = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            labels,
            registry=registry,
            buckets=WORKQUEUE_BUCKETS,
        )
        self.work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            labels,
            registry=registry,
            buckets=WORKQUEUE_BUCKETS,
        )
        self.unfinished_work = Gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't "
            "been observed by work_duration. Large values indicate stuck threads. "
            "One can deduce the number of stuck threads by observing the rate at "
            "which this increases.",
            labels,
            registry=registry,
        )
        self.longest_running = Gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            labels,
            registry=registry,
        )
        self.retries = Counter(
            "workqueue_retries_total",
            "Total number of retries handled by workqueue",
            labels,
            registry=registry,
        )
        PrometheusWorkqueueMetrics._by_registry.setdefault(registry, self)

    def new_depth_metric(self, name: str) -> GaugeMetric:
        return self.depth.labels(name=name)

    def new_adds_metric(self, name: str) -> CounterMetric:
        return self.adds.labels(name=name)

    def new_latency_metric(self, name: str) -> HistogramMetric:
        return self.latency.labels(name=name)

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        return self.work_duration.labels(name=name)

    def new_unfinished_work_seconds_metric(self, name: str) -> ScrapeGaugeMetric:
        return self.unfinished_work.labels(name=name)

    def new_longest_running_processor_seconds_metric(self, name: str) -> ScrapeGaugeMetric:
        return self.longest_running.labels(name=name)

    def new_retries_metric(self, name: str) -> CounterMetric:
        return self.retries.labels(name=name)


class QueueMetrics(Generic[T]):
    """Per-queue bookkeeping (client-go's defaultQueueMetrics).

    `add`, `get` and `done` are called with the queue's lock held; the scrape
    functions take the same lock, so the maps need no lock of their own.
    """

    def __init__(
        self,
        provider: WorkqueueMetricsProvider,
        name: str,
        clock: Clock,
        lock: threading.Lock,
    ) -> None:
        self._clock = clock
        self._lock = lock
        self._depth = provider.new_depth_metric(name)
        self._adds = provider.new_adds_metric(name)
        self._latency = provider.new_latency_metric(name)
        self._work_duration = provider.new_work_duration_metric(name)
        self._add_times: dict[T, float] = {}
        self._processing_start: dict[T, float] = {}
        ref = weakref.ref(self)
        provider.new_unfinished_work_seconds_metric(name).set_function(
            _scrape(ref, lambda m: m.unfinished_work()[0])
        )
        provider.new_longest_running_processor_seconds_metric(name).set_function(
            _scrape(ref, lambda m: m.unfinished_work()[1])
        )

    def add(self, item: T) -> None:
        self._adds.inc()
        self._depth.inc()
        if item not in self._add_times:
            self._add_times[item] = self._clock.now()

    def get(self, item: T) -> None:
        self._depth.dec()
        now = self._clock.now()
        self._processing_start[item] = now
        started = self._add_times.pop(item, None)
        if started is not None:
            self._latency.observe(now - started)

    def done(self, item: T) -> None:
        started = self._processing_start.pop(item, None)
        if started is not None:
            self._work_duration.observe(self._clock.now() - started)

    def unfinished_work(self) -> tuple[float, float]:
        """(total seconds in progress, longest single one), read under the queue lock."""
        with self._lock:
            now = self._clock.now()
            ages = [now - t for t in self._processing_start.values()]
        return (sum(ages), max(ages, default=0.0))


def _scrape(
    ref: weakref.ref[QueueMetrics[T]], read: Callable[[QueueMetrics[T]], float]
) -> Callable[[], float]:
    def value() -> float:
        metrics = ref()
        return 0.0 if metrics is None else read(metrics)

    return value


class RetryMetrics:
    """Counts add_after calls (client-go's retryMetrics)."""

    def __init__(self, provider: WorkqueueMetricsProvider, name: str) -> None:
        self._retries = provider.new_retries_metric(name)

    def retry(self) -> None:
        self._retries.inc()
