"""Events reach the API as `kubectl describe` shows them; repeats bump the count."""

from __future__ import annotations

from typing import Any

import kubernetes

from sedna.runtime import FakeClock, KubeClient, Metrics
from sedna.runtime.events import EventRecorder


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
