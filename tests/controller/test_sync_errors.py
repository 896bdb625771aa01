"""A failing sync reaches its object as a Warning Event (rate-limited), and a controller
says which failures pass (`TemporaryError`) and which do not (`PermanentError`)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import kubernetes
import pytest
from prometheus_client import CollectorRegistry

from sedna.runtime import (
    EVENTS,
    MODELS,
    EventRecorder,
    FakeClock,
    KubeClient,
    PermanentError,
    Result,
    TemporaryError,
)
from sedna.runtime.controller import Controller

from .helpers import wait_until

Behaviour = Callable[[str, int], Result | None]


class Warnings:
    """Records warnings as an EventRecorder would receive them."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []
        self._lock = threading.Lock()

    def warning(self, obj: Mapping[str, Any], reason: str, message: str) -> None:
        with self._lock:
            self.seen.append((obj["metadata"]["name"], reason, message))

    def reasons(self) -> list[str]:
        with self._lock:
            return [r for _, r, _ in self.seen]


class Failing(Controller):
    def __init__(self, behaviour: Behaviour, **kwargs: Any) -> None:
        super().__init__("failing", **kwargs)
        self.behaviour = behaviour
        self.attempts: dict[str, int] = {}

    def sync(self, key: str) -> Result | None:
        self.attempts[key] = self.attempts.get(key, 0) + 1
        return self.behaviour(key, self.attempts[key])


def lookup(key: str) -> Mapping[str, Any] | None:
    ns, name = key.split("/")
    return None if name == "gone" else {"metadata": {"namespace": ns, "name": name}}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make(clock: FakeClock) -> Iterator[Callable[..., Failing]]:
    made: list[Failing] = []

    def build(behaviour: Behaviour, **kwargs: Any) -> Failing:
        c = Failing(behaviour, clock=clock, metrics=CollectorRegistry(), lookup=lookup, **kwargs)
        made.append(c)
        c.run()
        assert clock.block_until_waiters(len(made))
        return c

    yield build
    for c in made:
        c.stop(drain=False, timeout=5)


def raise_(exc: Exception) -> Behaviour:
    def behaviour(key: str, attempt: int) -> Result | None:
        raise exc

    return behaviour


def test_an_exception_becomes_a_warning_event_at_most_once_a_minute(
    make: Callable[..., Failing], clock: FakeClock
) -> None:
    warnings = Warnings()
    c = make(raise_(RuntimeError("bucket unreachable")), events=warnings)
    c.enqueue("ns/job")
    assert wait_until(lambda: c.attempts.get("ns/job") == 1) and c.wait_idle()
    assert warnings.seen == [
        ("job", "SyncError", "sync failed: RuntimeError: bucket unreachable; retrying")
    ]
    for step, attempts in ((10, 2), (20, 3)):  # retries within the minute: no further Event
        clock.step(step)
        assert wait_until(lambda n=attempts: c.attempts["ns/job"] == n)  # type: ignore[misc]
        assert c.wait_idle()
    assert c.attempts["ns/job"] == 3
    assert warnings.reasons() == ["SyncError"]
    clock.step(40)  # backoff 40 s: now past the minute
    assert wait_until(lambda: c.attempts["ns/job"] == 4) and c.wait_idle()
    assert warnings.reasons() == ["SyncError", "SyncError"]


def test_temporary_error_retries_after_its_delay(
    make: Callable[..., Failing], clock: FakeClock
) -> None:
    def once(key: str, attempt: int) -> Result | None:
        if attempt == 1:
            raise TemporaryError("model not uploaded yet", delay=5)
        return None

    warnings = Warnings()
    c = make(once, events=warnings)
    c.enqueue("ns/job")
    assert wait_until(lambda: c.attempts.get("ns/job") == 1) and c.wait_idle()
    assert warnings.seen == [("job", "SyncRetrying", "model not uploaded yet; retrying in 5 s")]
    assert c.queue.num_requeues("ns/job") == 0  # not the backoff: the given delay
    clock.step(4.9)
    assert c.wait_idle() and c.attempts["ns/job"] == 1
    clock.step(0.1)
    assert wait_until(lambda: c.attempts["ns/job"] == 2)


def test_temporary_error_without_delay_uses_the_backoff(make: Callable[..., Failing]) -> None:
    c = make(raise_(TemporaryError("busy")), events=Warnings())
    c.enqueue("ns/job")
    assert wait_until(lambda: c.queue.num_requeues("ns/job") == 1)


def test_permanent_error_is_not_retried(make: Callable[..., Failing], clock: FakeClock) -> None:
    warnings = Warnings()
    c = make(raise_(PermanentError("spec.dataset.name: empty")), events=warnings)
    c.enqueue("ns/job")
    assert wait_until(lambda: c.attempts.get("ns/job") == 1) and c.wait_idle()
    clock.step(3600)
    assert c.wait_idle()
    assert c.attempts["ns/job"] == 1
    assert c.queue.num_requeues("ns/job") == 0
    assert warnings.seen == [
        ("job", "SyncFailed", "spec.dataset.name: empty; not retried until the object changes")
    ]


def test_a_vanished_object_or_a_failing_recorder_disturbs_nothing(
    make: Callable[..., Failing],
) -> None:
    class Broken:
        def warning(self, obj: Mapping[str, Any], reason: str, message: str) -> None:
            raise OSError("recorder down")

    c = make(raise_(RuntimeError("x")), events=Broken())
    c.enqueue("ns/gone")
    c.enqueue("ns/job")
    assert wait_until(lambda: c.queue.num_requeues("ns/job") == 1)
    assert c.queue.num_requeues("ns/gone") == 1
    assert c.is_running()


def test_the_event_reaches_the_object_in_the_api(
    api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    kube = KubeClient(api_client)
    model = kube.resource(MODELS).create(
        namespace,
        {
            "apiVersion": "sedna.io/v1alpha1",
            "kind": "Model",
            "metadata": {"name": "m"},
            "spec": {"url": "s3://b/m", "format": "pb"},
        },
    )
    recorder = EventRecorder(kube)
    c = Failing(
        raise_(PermanentError("spec.format: pb is not served here")),
        events=recorder,
        lookup=lambda key: model,
    )
    c.run()
    try:
        c.enqueue(f"{namespace}/m")
        assert wait_until(lambda: c.attempts.get(f"{namespace}/m") == 1) and c.wait_idle()
        recorder.flush()
    finally:
        c.stop()
        recorder.stop()
    events = kube.resource(EVENTS).list(namespace)["items"]
    assert [(e["type"], e["reason"], e["involvedObject"]["name"]) for e in events] == [
        ("Warning", "SyncFailed", "m")
    ]
    assert events[0]["involvedObject"]["kind"] == "Model"


def test_with_an_informer_the_event_names_the_kind(
    api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    from sedna.runtime import SharedInformerFactory

    kube = KubeClient(api_client)
    kube.resource(MODELS).create(
        namespace,
        {
            "apiVersion": "sedna.io/v1alpha1",
            "kind": "Model",
            "metadata": {"name": "listed"},
            "spec": {"url": "s3://b/m", "format": "pb"},
        },
    )
    factory = SharedInformerFactory(kube, namespace=namespace)
    informer = factory.informer(MODELS)
    recorder = EventRecorder(kube)
    c = Failing(raise_(RuntimeError("boom")), events=recorder, informer=informer)
    factory.start()
    try:
        assert factory.wait_for_cache_sync(5.0)
        c.run()
        c.enqueue(f"{namespace}/listed")
        assert wait_until(lambda: c.attempts.get(f"{namespace}/listed") == 1) and c.wait_idle()
        recorder.flush()
    finally:
        c.stop(drain=False)
        factory.stop()
        recorder.stop()
    (event,) = kube.resource(EVENTS).list(namespace)["items"]
    assert event["reason"] == "SyncError"
    involved = event["involvedObject"]
    assert (involved["kind"], involved["apiVersion"], involved["name"]) == (
        "Model",
        "sedna.io/v1alpha1",
        "listed",
    )
