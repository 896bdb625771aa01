"""The reconcile loop: outcomes, backoff in virtual time, crash safety, shutdown."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from loguru import logger
from prometheus_client import CollectorRegistry

from sedna.runtime.clock import FakeClock
from sedna.runtime.controller import (
    Controller,
    ControllerMetricsProvider,
    NoopControllerMetrics,
    PrometheusControllerMetrics,
    Result,
    retry_all_waiting,
)
from sedna.runtime.workqueue import (
    ItemExponentialFailureRateLimiter,
    PrometheusWorkqueueMetrics,
    RateLimitingQueue,
)

from .helpers import wait_until


class Recorder(Controller):
    """Runs `behaviour(key, attempt)` as its sync and records every call."""

    def __init__(
        self,
        behaviour: Callable[[str, int], Result | None],
        **kwargs: Any,
    ) -> None:
        super().__init__("recorder", **kwargs)
        self.behaviour = behaviour
        self.calls: list[str] = []
        self._lock = threading.Lock()

    def attempts(self, key: str) -> int:
        with self._lock:
            return self.calls.count(key)

    def sync(self, key: str) -> Result | None:
        with self._lock:
            self.calls.append(key)
            attempt = self.calls.count(key)
        return self.behaviour(key, attempt)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def logs() -> Iterator[list[Any]]:
    records: list[Any] = []
    handler = logger.add(lambda m: records.append(m.record), level="DEBUG")
    yield records
    logger.remove(handler)


@pytest.fixture
def make(clock: FakeClock, registry: CollectorRegistry) -> Iterator[Callable[..., Recorder]]:
    made: list[Recorder] = []

    def factory(behaviour: Callable[[str, int], Result | None], **kwargs: Any) -> Recorder:
        kwargs.setdefault("clock", clock)
        kwargs.setdefault("metrics", registry)
        c = Recorder(behaviour, **kwargs)
        made.append(c)
        c.run()
        # The default queue's waiting loop is idle on the clock.
        assert clock.block_until_waiters(len(made))
        return c

    yield factory
    for c in made:
        c.stop(drain=False, timeout=5)


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    value = registry.get_sample_value(name, {"controller": "recorder", **labels})
    return 0.0 if value is None else value


def test_success_forgets(make: Callable[..., Recorder], registry: CollectorRegistry) -> None:
    c = make(lambda key, n: None)
    c.enqueue_rate_limited("ns/a")  # some earlier failure history ...
    c.queue.forget("ns/a")
    c.queue.rate_limiter.when("ns/a")
    assert c.queue.num_requeues("ns/a") == 1
    c.enqueue("ns/a")
    assert c.wait_idle()
    assert c.calls == ["ns/a"]
    assert c.queue.num_requeues("ns/a") == 0  # ... is forgotten by the success
    assert sample(registry, "controller_reconcile_total", result="success") == 1
    assert sample(registry, "controller_reconcile_time_seconds_count") == 1
    assert sample(registry, "controller_reconcile_errors_total") == 0


def test_exception_requeues_with_backoff(
    make: Callable[..., Recorder],
    clock: FakeClock,
    registry: CollectorRegistry,
    logs: list[Any],
) -> None:
    def fail_three_times(key: str, attempt: int) -> Result | None:
        if attempt <= 3:
            raise RuntimeError(f"boom {attempt}")
        return None

    c = make(fail_three_times)
    c.enqueue("ns/job")
    assert wait_until(lambda: c.queue.num_requeues("ns/job") == 1)
    assert c.wait_idle()

    for expected_delay, attempts_after in [(10, 2), (20, 3), (40, 4)]:
        clock.step(expected_delay - 0.001)
        assert c.wait_idle()
        assert c.attempts("ns/job") == attempts_after - 1
        clock.step(0.001)
        assert wait_until(lambda n=attempts_after: c.attempts("ns/job") == n)  # type: ignore[misc]
        assert c.wait_idle()
    assert c.queue.num_requeues("ns/job") == 0  # the 4th attempt succeeded
    assert sample(registry, "controller_reconcile_errors_total") == 3
    assert sample(registry, "controller_reconcile_total", result="error") == 3
    assert sample(registry, "controller_reconcile_total", result="success") == 1
    assert registry.get_sample_value("workqueue_retries_total", {"name": "recorder"}) == 3

    errors = [r for r in logs if r["level"].name == "ERROR"]
    assert len(errors) == 3
    first = errors[0]
    assert "recorder" in first["message"] and "ns/job" in first["message"]
    assert first["extra"] == {
        "controller": "recorder",
        "kind": "recorder",
        "job": "ns/job",
        "key": "ns/job",
    }
    assert first["exception"] is not None and first["exception"].traceback is not None
    assert isinstance(first["exception"].value, RuntimeError)


def test_requeue_after_forgets_and_adds_after(
    make: Callable[..., Recorder], clock: FakeClock, registry: CollectorRegistry
) -> None:
    def look_again(key: str, attempt: int) -> Result | None:
        return Result(requeue_after=30.0) if attempt == 1 else None

    c = make(look_again)
    c.queue.rate_limiter.when("ns/a")  # failure history to be forgotten
    c.enqueue("ns/a")
    assert wait_until(lambda: c.queue.num_waiting() == 1)
    assert c.wait_idle()
    assert c.queue.num_requeues("ns/a") == 0
    clock.step(29.999)
    assert c.wait_idle()
    assert c.attempts("ns/a") == 1
    clock.step(0.001)
    assert wait_until(lambda: c.attempts("ns/a") == 2)
    assert c.wait_idle()
    assert sample(registry, "controller_reconcile_total", result="requeue_after") == 1
    assert sample(registry, "controller_reconcile_total", result="success") == 1


def test_requeue_after_wins_over_requeue_and_zero_is_success(
    make: Callable[..., Recorder], registry: CollectorRegistry
) -> None:
    results = {
        "ns/both": Result(requeue=True, requeue_after=5.0),
        "ns/zero": Result(requeue_after=0.0),
        "ns/empty": Result(),
    }
    c = make(lambda key, n: results[key] if n == 1 else None)
    for key in results:
        c.enqueue(key)
    assert c.wait_idle()
    assert c.queue.num_waiting() == 1
    assert c.queue.num_requeues("ns/both") == 0
    assert sample(registry, "controller_reconcile_total", result="requeue_after") == 1
    assert sample(registry, "controller_reconcile_total", result="success") == 2


def test_requeue_uses_the_rate_limiter(
    make: Callable[..., Recorder], clock: FakeClock, registry: CollectorRegistry
) -> None:
    c = make(lambda key, n: Result(requeue=True) if n <= 2 else None)
    c.enqueue("ns/a")
    assert wait_until(lambda: c.queue.num_requeues("ns/a") == 1)
    assert c.wait_idle()
    clock.step(10)
    assert wait_until(lambda: c.queue.num_requeues("ns/a") == 2)
    assert c.wait_idle()
    clock.step(20)
    assert wait_until(lambda: c.attempts("ns/a") == 3)
    assert c.wait_idle()
    assert c.queue.num_requeues("ns/a") == 0
    assert sample(registry, "controller_reconcile_total", result="requeue") == 2


class Panic(BaseException):
    pass


@pytest.mark.parametrize("exc", [SystemExit(3), KeyboardInterrupt(), Panic("deep")])
def test_base_exception_does_not_kill_the_worker(
    make: Callable[..., Recorder],
    registry: CollectorRegistry,
    logs: list[Any],
    exc: BaseException,
) -> None:
    def crash_once(key: str, attempt: int) -> Result | None:
        if key == "ns/bad":
            raise exc
        return None

    c = make(crash_once, workers=1)
    c.enqueue("ns/bad")
    assert c.wait_idle()
    c.enqueue("ns/good")  # the only worker must still be there to take it
    assert c.wait_idle()
    assert c.calls == ["ns/bad", "ns/good"]
    assert c.is_running()
    assert c.queue.num_requeues("ns/bad") == 1
    assert sample(registry, "controller_reconcile_panics_total") == 1
    assert sample(registry, "controller_reconcile_errors_total") == 1
    crit = [r for r in logs if r["level"].name == "CRITICAL"]
    assert len(crit) == 1 and crit[0]["exception"].value is exc


def test_no_worker_dies_under_many_failures(make: Callable[..., Recorder]) -> None:
    def chaos(key: str, attempt: int) -> Result | None:
        i = int(key.split("/")[1])
        if i % 3 == 0:
            raise ValueError(key)
        if i % 3 == 1:
            raise SystemExit(1)
        return None

    c = make(chaos, workers=4)
    for i in range(60):
        c.enqueue(f"ns/{i}")
    assert c.wait_idle()
    assert len(c.calls) == 60
    assert all(t.is_alive() for t in c._threads)


def test_wrong_return_type_is_an_error(
    make: Callable[..., Recorder], registry: CollectorRegistry
) -> None:
    c = make(lambda key, n: "done" if n == 1 else None)
    c.enqueue("ns/a")
    assert c.wait_idle()
    assert c.queue.num_requeues("ns/a") == 1
    assert sample(registry, "controller_reconcile_errors_total") == 1


def test_a_key_is_never_synced_twice_at_once(make: Callable[..., Recorder]) -> None:
    running: set[str] = set()
    overlaps: list[str] = []
    lock = threading.Lock()
    release = threading.Event()

    def slow(key: str, attempt: int) -> Result | None:
        with lock:
            if key in running:
                overlaps.append(key)
            running.add(key)
        release.wait(60)  # released by the test; the bound only ends a failed one
        with lock:
            running.discard(key)
        return None

    c = make(slow, workers=4)
    c.enqueue("ns/a")
    assert wait_until(lambda: c.queue.processing_count() == 1)
    for _ in range(10):
        c.enqueue("ns/a")  # changed while syncing: dirty, not handed to a 2nd worker
    assert c.queue.processing_count() == 1
    release.set()
    assert c.wait_idle()
    assert overlaps == []
    assert c.attempts("ns/a") == 2


def test_stop_drains_queued_keys(clock: FakeClock) -> None:
    gate = threading.Event()

    def gated(key: str, attempt: int) -> Result | None:
        gate.wait(60)  # released by the test; the bound only ends a failed one
        return None

    c = Recorder(gated, workers=2, clock=clock)
    c.run()
    for i in range(20):
        c.enqueue(f"ns/{i}")
    c.enqueue_after("ns/later", 100)  # pending delayed keys are dropped
    threading.Timer(0.02, gate.set).start()
    c.stop(drain=True, timeout=10)
    assert not c.is_running()
    assert sorted(c.calls) == sorted(f"ns/{i}" for i in range(20))
    c.enqueue("ns/after-stop")
    assert len(c.queue) == 0
    assert not clock.has_waiters()


def test_stop_without_drain_finishes_running_syncs_only(clock: FakeClock) -> None:
    started = threading.Event()
    gate = threading.Event()

    def gated(key: str, attempt: int) -> Result | None:
        started.set()
        gate.wait(60)  # released by the test; the bound only ends a failed one
        return None

    c = Recorder(gated, workers=1, clock=clock)
    c.run()
    for i in range(10):
        c.enqueue(f"ns/{i}")
    assert started.wait(5)
    threading.Timer(0.02, gate.set).start()
    c.stop(drain=False, timeout=10)
    assert not c.is_running()
    assert c.calls == ["ns/0"]


def test_stop_from_inside_a_sync(clock: FakeClock) -> None:
    holder: list[Controller] = []
    c = Recorder(lambda key, n: holder[0].stop(drain=False), clock=clock)
    holder.append(c)
    c.run()
    c.enqueue("ns/a")
    assert wait_until(lambda: not c.is_running())


def test_lifecycle_errors(clock: FakeClock) -> None:
    with pytest.raises(ValueError):
        Recorder(lambda k, n: None, workers=0)
    c = Recorder(lambda k, n: None, clock=clock)
    c.run()
    with pytest.raises(RuntimeError):
        c.run()
    c.stop()
    c2 = Recorder(lambda k, n: None, clock=clock)
    c2.stop()
    with pytest.raises(RuntimeError):
        c2.run()


def test_unimplemented_sync_is_an_error(clock: FakeClock) -> None:
    c = Controller("bare", clock=clock)
    c.run()
    try:
        c.enqueue("ns/a")
        assert c.wait_idle()
        assert c.queue.num_requeues("ns/a") == 1
    finally:
        c.stop(drain=False)


def test_metrics_arguments(clock: FakeClock) -> None:
    class HasRegistry:
        def __init__(self) -> None:
            self.registry = CollectorRegistry()

    holder = HasRegistry()
    a = Controller("a", metrics=holder, clock=clock)
    b = Controller("b", metrics=holder.registry, clock=clock)  # same families, no clash
    assert a._metrics is b._metrics
    assert a._metrics is PrometheusControllerMetrics.for_registry(holder.registry)
    assert a.queue._metrics is not None
    assert PrometheusWorkqueueMetrics.for_registry(holder.registry) is not None

    noop = NoopControllerMetrics()
    assert isinstance(noop, ControllerMetricsProvider)
    c = Controller("c", metrics=noop, clock=clock)
    assert c._metrics is noop
    d = Controller("d", clock=clock)
    assert isinstance(d._metrics, NoopControllerMetrics)
    assert d.queue._metrics is None

    q: RateLimitingQueue[str] = RateLimitingQueue(
        "custom", rate_limiter=ItemExponentialFailureRateLimiter(1.0, 2.0), clock=clock
    )
    e = Controller("e", queue=q, clock=clock)
    assert e.queue is q
    for ctl in (a, b, c, d, e):
        ctl.stop()


def test_keys_in_backoff_are_retried_at_once_when_their_cause_has_passed(
    clock: FakeClock,
) -> None:
    """A full disk made every sync fail into a long backoff; when the store writes again,
    `retry_all_waiting` runs them now instead of after up to 360 s."""
    failing = threading.Event()
    failing.set()

    def flaky(key: str, attempt: int) -> Result | None:
        if failing.is_set():
            raise RuntimeError("the store cannot write")
        return None

    c = Recorder(flaky, workers=1, clock=clock)
    c.run()
    try:
        c.enqueue("ns/a")
        c.enqueue("ns/b")
        assert wait_until(lambda: c.queue.num_waiting() == 2), "both in backoff"
        assert retry_all_waiting() >= 2  # every live controller of the process
        # the keys came back without the clock moving, and sync once each
        assert wait_until(lambda: c.attempts("ns/a") == 2 and c.attempts("ns/b") == 2)
        assert wait_until(lambda: c.queue.num_waiting() == 2), "failed again: back off again"
        failing.clear()
        assert c.retry_waiting() == 2
        assert wait_until(lambda: c.attempts("ns/a") == 3 and c.attempts("ns/b") == 3)
        assert c.wait_idle()
        assert c.queue.num_waiting() == 0
    finally:
        c.stop()
    assert c.retry_waiting() == 0  # a stopped controller has nothing waiting to run
