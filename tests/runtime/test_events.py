"""Events reach the API as `kubectl describe` shows them; repeats bump the count."""

from __future__ import annotations

import threading
from typing import Any

import kubernetes
import pytest

from sedna.runtime import FakeClock, KubeClient, Metrics
from sedna.runtime.events import MAX_MESSAGE, EventRecorder, coalesced_events


def events_for(api_client: kubernetes.client.ApiClient, namespace: str) -> list[Any]:
    items = kubernetes.client.CoreV1Api(api_client).list_namespaced_event(namespace).items
    return sorted(items, key=lambda e: e.reason)


def job(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "IncrementalLearningJob",
        "metadata": {"name": "helmet", "namespace": namespace, "uid": "uid-1"},
    }


def test_event_written_with_involved_object(
    api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    metrics = Metrics()
    rec = EventRecorder(KubeClient(api_client), metrics=metrics, clock=FakeClock())
    rec.normal(job(namespace), "StageChanged", "Train/Waiting")
    rec.warning(job(namespace), "MissingDataset", "spec.dataset.name: dataset d1 not found")
    rec.flush()
    rec.stop()
    got = events_for(api_client, namespace)
    assert [(e.reason, e.type, e.message) for e in got] == [
        ("MissingDataset", "Warning", "spec.dataset.name: dataset d1 not found"),
        ("StageChanged", "Normal", "Train/Waiting"),
    ]
    involved = got[0].involved_object
    assert (involved.kind, involved.name, involved.uid) == (
        "IncrementalLearningJob",
        "helmet",
        "uid-1",
    )
    assert got[0].source.component == "sedna-gm"
    sample = metrics.registry.get_sample_value(
        "kube_events_emitted_total", {"type": "Warning", "reason": "MissingDataset"}
    )
    assert sample == 1.0


def test_repeated_event_bumps_count(
    api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    rec = EventRecorder(KubeClient(api_client))
    for _ in range(3):
        rec.warning(job(namespace), "BackOff", "retrying stage Train in 10s")
    rec.flush()
    rec.stop()
    got = events_for(api_client, namespace)
    assert len(got) == 1
    assert got[0].count == 3


def test_bad_object_does_not_break_the_recorder(
    api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    rec = EventRecorder(KubeClient(api_client))
    rec.normal({"kind": "Thing"}, "NoMeta", "an object without metadata")  # lands in default
    rec.normal({"metadata": {"namespace": "no-such-ns-zz", "name": "x"}}, "Lost", "refused")
    rec.normal(job(namespace), "After", "still works")
    rec.flush()
    rec.stop()
    assert [e.reason for e in events_for(api_client, namespace)] == ["After"]


def test_one_block_writes_one_event_per_object_type_and_reason(
    api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    """A sync that creates a Service and three workers writes one SuccessfulCreate."""
    metrics = Metrics()
    rec = EventRecorder(KubeClient(api_client), metrics=metrics)
    other = {**job(namespace), "metadata": {**job(namespace)["metadata"], "name": "b", "uid": "u2"}}
    with coalesced_events():
        rec.normal(job(namespace), "SuccessfulCreate", "Created Service s")
        rec.normal(job(namespace), "SuccessfulCreate", "Created worker pod p1")
        rec.warning(job(namespace), "SuccessfulCreate", "a Warning is not merged with Normal")
        rec.normal(other, "SuccessfulCreate", "Created worker pod q1")
        rec.normal(job(namespace), "Running", "phase Pending -> Running")
        with coalesced_events():  # a nested block belongs to the outer one
            rec.normal(job(namespace), "SuccessfulCreate", "Created worker pod p2")
        rec.normal(job(namespace), "SuccessfulCreate", "Created worker pod p1")  # said already
        rec.flush(0)
        assert events_for(api_client, namespace) == []  # nothing leaves before the block ends
    rec.flush()
    rec.stop()
    got = {(e.involved_object.name, e.type, e.reason): e for e in events_for(api_client, namespace)}
    assert {k: e.message for k, e in got.items()} == {
        ("helmet", "Normal", "SuccessfulCreate"): (
            "Created Service s; Created worker pod p1; Created worker pod p2"
        ),
        ("helmet", "Warning", "SuccessfulCreate"): "a Warning is not merged with Normal",
        ("b", "Normal", "SuccessfulCreate"): "Created worker pod q1",
        ("helmet", "Normal", "Running"): "phase Pending -> Running",
    }
    assert all(e.count == 1 for e in got.values())
    # the metric still counts what the controllers said, one per call
    sample = metrics.registry.get_sample_value(
        "kube_events_emitted_total", {"type": "Normal", "reason": "SuccessfulCreate"}
    )
    assert sample == 5.0


def test_a_long_merge_is_split_at_the_message_limit(
    api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    rec = EventRecorder(KubeClient(api_client))
    messages = [f"Created worker pod {i:03d}-" + "x" * 300 for i in range(7)]
    with coalesced_events():
        for m in messages:
            rec.normal(job(namespace), "SuccessfulCreate", m)
        rec.normal(job(namespace), "Oversized", "y" * 5000)  # cut like any event
    rec.flush()
    rec.stop()
    got = events_for(api_client, namespace)
    merged = sorted(e.message for e in got if e.reason == "SuccessfulCreate")
    assert all(len(m) <= MAX_MESSAGE for m in merged)
    assert "; ".join(merged).split("; ") == messages  # all of them, in order
    assert len(merged) == 3  # three of 320 characters fit in 1,024
    assert [len(e.message) for e in got if e.reason == "Oversized"] == [MAX_MESSAGE]


def test_events_of_a_block_that_raises_are_still_written(
    api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    rec = EventRecorder(KubeClient(api_client))
    with pytest.raises(RuntimeError), coalesced_events():
        rec.normal(job(namespace), "SuccessfulCreate", "Created worker pod p1")
        raise RuntimeError("the sync failed after creating")
    rec.flush()
    rec.stop()
    assert [e.message for e in events_for(api_client, namespace)] == ["Created worker pod p1"]


def test_a_block_is_per_thread(api_client: kubernetes.client.ApiClient, namespace: str) -> None:
    """Another thread's events are not held by this thread's block."""
    rec = EventRecorder(KubeClient(api_client))
    with coalesced_events():
        thread = threading.Thread(
            target=rec.normal, args=(job(namespace), "Elsewhere", "from another thread")
        )
        thread.start()
        thread.join()
        rec.flush()
        assert [e.reason for e in events_for(api_client, namespace)] == ["Elsewhere"]
    rec.stop()
