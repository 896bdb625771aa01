"""client-go's queue_test.go and metrics_test.go, ported."""

from __future__ import annotations

import gc
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from sedna.runtime.clock import FakeClock
from sedna.runtime.workqueue import (
    DelayingQueue,
    NoopWorkqueueMetrics,
    PrometheusWorkqueueMetrics,
    Queue,
)

from .helpers import wait_until

ShutDown = Callable[[Queue[Any]], None]
SHUTDOWNS: list[ShutDown] = [Queue.shut_down, Queue.shut_down_with_drain]


@pytest.mark.parametrize("shut_down", SHUTDOWNS, ids=["shut_down", "shut_down_with_drain"])
def test_basic(shut_down: ShutDown) -> None:
    q: Queue[Any] = Queue()
    producers, consumers = 20, 10
    errors: list[str] = []

    def produce(i: int) -> None:
        for _ in range(20):
            q.add(i)
            time.sleep(0.0001)

    def consume() -> None:
        while True:
            item, quit_ = q.get()
            if item == "added after shutdown!":
                errors.append("got an item added after shutdown")
            if quit_:
                return
            time.sleep(0.0003)
            q.done(item)

    pt = [threading.Thread(target=produce, args=(i,)) for i in range(producers)]
    ct = [threading.Thread(target=consume) for _ in range(consumers)]
    for t in pt + ct:
        t.start()
    for t in pt:
        t.join()
    shut_down(q)
    q.add("added after shutdown!")
    for t in ct:
        t.join(10)
    assert not errors
    assert len(q) == 0


@pytest.mark.parametrize("shut_down", SHUTDOWNS, ids=["shut_down", "shut_down_with_drain"])
def test_add_while_processing(shut_down: ShutDown) -> None:
    q: Queue[Any] = Queue()
    pt = [threading.Thread(target=q.add, args=(i,)) for i in range(50)]

    def consume() -> None:
        # Every worker re-adds every item up to two times: the dirty-while-processing case.
        counters: dict[Any, int] = {}
        while True:
            item, quit_ = q.get()
            if quit_:
                return
            counters[item] = counters.get(item, 0) + 1
            if counters[item] < 2:
                q.add(item)
            q.done(item)

    ct = [threading.Thread(target=consume) for _ in range(10)]
    for t in pt + ct:
        t.start()
    for t in pt:
        t.join()
    shut_down(q)
    for t in ct:
        t.join(10)
    assert len(q) == 0


def test_len() -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    assert len(q) == 1
    q.add("bar")
    assert q.len() == 2
    q.add("foo")  # should not increase the queue length
    assert len(q) == 2


def test_reinsert() -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    item, _ = q.get()
    assert item == "foo"
    q.add("foo")  # add it back while processing
    assert len(q) == 0  # not handed out twice
    q.done("foo")
    item, _ = q.get()  # it is back on the queue
    assert item == "foo"
    q.done("foo")
    assert len(q) == 0


def test_collapse() -> None:
    q: Queue[str] = Queue()
    q.add("bar")
    q.add("bar")
    item, _ = q.get()
    assert item == "bar"
    q.done("bar")
    assert len(q) == 0


def test_collapse_while_processing() -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    item, _ = q.get()
    assert item == "foo"
    q.add("foo")
    q.add("foo")
    got: list[str | None] = []

    def other_worker() -> None:
        i, _ = q.get()
        got.append(i)
        q.done("foo")

    t = threading.Thread(target=other_worker)
    t.start()
    t.join(0.05)  # give it a head start: it must stay blocked until done
    assert t.is_alive(), "worker should be blocked until the first one is done"
    q.done("foo")
    t.join(5)
    assert got == ["foo"]
    assert len(q) == 0


def test_queue_drainage_using_shut_down_with_drain() -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    q.add("bar")
    first, _ = q.get()
    second, _ = q.get()
    finished = threading.Thread(target=q.shut_down_with_drain)
    finished.start()
    # ShutDownWithDrain is called before the items are marked done.
    assert wait_until(lambda: q.get()[1])
    assert finished.is_alive()
    assert first is not None and second is not None
    q.done(first)
    q.done(second)
    finished.join(5)
    assert not finished.is_alive()


def test_no_queue_drainage_using_shut_down() -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    q.add("bar")
    q.get()
    q.get()
    t = threading.Thread(target=q.shut_down)
    t.start()
    t.join(5)  # returns without the items being done
    assert not t.is_alive()


def test_force_queue_shutdown_using_shut_down() -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    q.add("bar")
    q.get()
    q.get()
    t = threading.Thread(target=q.shut_down_with_drain)
    t.start()
    assert wait_until(lambda: q.get()[1])
    q.shut_down()  # a second SIGTERM forces the drain to stop waiting
    t.join(5)
    assert not t.is_alive()


def test_queue_drainage_using_shut_down_with_drain_with_dirty_item() -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    gotten, _ = q.get()
    q.add("foo")
    t = threading.Thread(target=q.shut_down_with_drain)
    t.start()
    assert wait_until(lambda: q.get()[1])
    assert gotten is not None
    q.done(gotten)
    # Done put the dirty item back, so the queue is not finished yet.
    again, shutting_down = q.get()
    assert not shutting_down
    assert again == "foo"
    q.done(again)
    _, shutting_down = q.get()
    assert shutting_down
    t.join(5)
    assert not t.is_alive()


def test_add_after_shutdown_is_ignored() -> None:
    q: Queue[str] = Queue()
    q.shut_down()
    assert q.shutting_down()
    q.add("foo")
    assert len(q) == 0
    assert q.get() == (None, True)


def test_garbage_collection() -> None:
    class Big:
        data = b"hello"

    q: Queue[Big] = Queue()
    obj = Big()
    ref = weakref.ref(obj)
    q.add(obj)
    item, _ = q.get()
    assert item is obj
    q.done(obj)
    del obj, item
    gc.collect()
    assert ref() is None


def test_wait_idle() -> None:
    q: Queue[str] = Queue()
    assert q.wait_idle(0)
    q.add("a")
    assert not q.wait_idle(0.01)

    def worker() -> None:
        item, _ = q.get()
        assert item is not None
        q.done(item)

    t = threading.Thread(target=worker)
    t.start()
    assert q.wait_idle(5)
    t.join()


# -- metrics (client-go's metrics_test.go) -------------------------------------


class RecordingMetric:
    def __init__(self) -> None:
        self.incs = 0
        self.decs = 0
        self.observations: list[float] = []
        self.fn: Callable[[], float] | None = None

    def inc(self) -> None:
        self.incs += 1

    def dec(self) -> None:
        self.decs += 1

    def observe(self, amount: float) -> None:
        self.observations.append(amount)

    def set_function(self, f: Callable[[], float]) -> None:
        self.fn = f

    @property
    def gauge(self) -> float:
        return self.fn() if self.fn is not None else float(self.incs - self.decs)


class RecordingProvider:
    def __init__(self) -> None:
        self.depth = RecordingMetric()
        self.adds = RecordingMetric()
        self.latency = RecordingMetric()
        self.duration = RecordingMetric()
        self.unfinished = RecordingMetric()
        self.longest = RecordingMetric()
        self.retries = RecordingMetric()

    def new_depth_metric(self, name: str) -> RecordingMetric:
        return self.depth

    def new_adds_metric(self, name: str) -> RecordingMetric:
        return self.adds

    def new_latency_metric(self, name: str) -> RecordingMetric:
        return self.latency

    def new_work_duration_metric(self, name: str) -> RecordingMetric:
        return self.duration

    def new_unfinished_work_seconds_metric(self, name: str) -> RecordingMetric:
        return self.unfinished

    def new_longest_running_processor_seconds_metric(self, name: str) -> RecordingMetric:
        return self.longest

    def new_retries_metric(self, name: str) -> RecordingMetric:
        return self.retries


def test_metrics() -> None:
    mp = RecordingProvider()
    clock = FakeClock()
    q: Queue[str] = Queue("test", clock=clock, metrics=mp)

    q.add("foo")
    assert mp.adds.gauge == 1
    assert mp.depth.gauge == 1
    clock.step(50e-6)

    item, _ = q.get()
    assert item == "foo"
    assert mp.latency.observations == [pytest.approx(5e-5)]

    # Add it back while processing; multiple adds of the same item are de-duped.
    for _ in range(5):
        q.add("foo")
    assert mp.adds.gauge == 2
    assert mp.depth.gauge == 1  # one thing remains in the queue

    clock.step(25e-6)
    q.done("foo")
    assert mp.duration.observations == [pytest.approx(2.5e-5)]
    assert mp.depth.gauge == 1

    item, _ = q.get()
    assert item == "foo"
    assert mp.latency.observations[-1] == pytest.approx(2.5e-5)
    assert len(mp.latency.observations) == 2

    # Unfinished work is computed when read.
    clock.step(0.001)
    assert mp.unfinished.gauge == pytest.approx(0.001)
    assert mp.longest.gauge == pytest.approx(0.001)

    q.done("foo")
    assert mp.duration.observations[-1] == pytest.approx(0.001)
    assert len(mp.duration.observations) == 2
    assert mp.unfinished.gauge == 0.0
    assert mp.longest.gauge == 0.0


def test_unfinished_work_sums_and_takes_longest() -> None:
    mp = RecordingProvider()
    clock = FakeClock()
    q: Queue[str] = Queue("test", clock=clock, metrics=mp)
    q.add("a")
    q.get()
    clock.step(2)
    q.add("b")
    q.get()
    clock.step(1)
    assert mp.unfinished.gauge == pytest.approx(3 + 1)
    assert mp.longest.gauge == pytest.approx(3)


def test_unnamed_queue_keeps_no_metrics() -> None:
    mp = RecordingProvider()
    q: Queue[str] = Queue("", metrics=mp)
    q.add("foo")
    assert mp.adds.incs == 0
    assert mp.unfinished.fn is None


def test_noop_provider_accepts_everything() -> None:
    q: DelayingQueue[str] = DelayingQueue("noop", metrics=NoopWorkqueueMetrics())
    try:
        q.add("a")
        q.add_after("b", 0)
        item, _ = q.get()
        assert item == "a"
        q.done("a")
    finally:
        q.shut_down()


def test_prometheus_provider_names_and_values() -> None:
    registry = CollectorRegistry()
    provider = PrometheusWorkqueueMetrics.for_registry(registry)
    assert PrometheusWorkqueueMetrics.for_registry(registry) is provider
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue("jobs", clock=clock, metrics=provider)
    try:
        q.add("a")
        q.add("b")
        q.add_after("c", 0)  # a retry, added at once
        item, _ = q.get()
        clock.step(1.5)

        def value(name: str) -> float | None:
            return registry.get_sample_value(name, {"name": "jobs"})

        assert value("workqueue_depth") == 2
        assert value("workqueue_adds_total") == 3
        assert value("workqueue_retries_total") == 1
        assert value("workqueue_queue_duration_seconds_count") == 1
        assert value("workqueue_unfinished_work_seconds") == pytest.approx(1.5)
        assert value("workqueue_longest_running_processor_seconds") == pytest.approx(1.5)
        assert item is not None
        q.done(item)
        assert value("workqueue_work_duration_seconds_count") == 1
        assert value("workqueue_work_duration_seconds_sum") == pytest.approx(1.5)
        assert value("workqueue_unfinished_work_seconds") == 0
    finally:
        q.shut_down()


def test_prometheus_scrape_of_a_discarded_queue_reads_zero() -> None:
    registry = CollectorRegistry()
    provider = PrometheusWorkqueueMetrics(registry)
    q: Queue[str] = Queue("gone", metrics=provider)
    q.add("a")
    q.get()
    del q
    gc.collect()
    assert registry.get_sample_value("workqueue_unfinished_work_seconds", {"name": "gone"}) == 0
