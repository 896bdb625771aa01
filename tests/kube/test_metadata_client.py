"""``ResourceClient`` get/list/watch with ``metadata_only``, against the in-process server."""

from __future__ import annotations

from typing import Any

import kubernetes
import pytest

from sedna.runtime.kube import MODELS, NODES, PODS, KubeClient, NotFound
from sedna.runtime.kube.metadata import as_partial, as_partial_event, as_partial_list


@pytest.fixture()
def kube(api_client: kubernetes.client.ApiClient) -> KubeClient:
    return KubeClient(api_client)


def pod(name: str, **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


def partial_of(full: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "meta.k8s.io/v1",
        "kind": "PartialObjectMetadata",
        "metadata": full["metadata"],
    }


def test_get_and_list_metadata_only(kube: KubeClient, namespace: str) -> None:
    pods = kube.resource(PODS)
    for i in range(3):
        pods.create(namespace, pod(f"p{i}", i=str(i)))
    full = pods.get(namespace, "p0")
    assert pods.get(namespace, "p0", metadata_only=True) == partial_of(full)
    with pytest.raises(NotFound):
        pods.get(namespace, "absent", metadata_only=True)

    first = pods.list(namespace, limit=2, metadata_only=True)
    assert first["kind"] == "PartialObjectMetadataList"
    assert first["metadata"]["remainingItemCount"] == 1
    rest = pods.list(namespace, continue_token=first["metadata"]["continue"], metadata_only=True)
    items = first["items"] + rest["items"]
    assert items == [partial_of(o) for o in pods.list(namespace)["items"]]
    selected = pods.list(namespace, label_selector="i=2", metadata_only=True)
    assert [o["metadata"]["name"] for o in selected["items"]] == ["p2"]


def test_watch_metadata_only(kube: KubeClient, namespace: str) -> None:
    models = kube.resource(MODELS)
    rv = models.list(namespace)["metadata"]["resourceVersion"]
    body = {"metadata": {"name": "m"}, "spec": {"url": "s3://m/m.pb", "format": "pb"}}
    created = models.create(namespace, body)
    models.delete(namespace, "m")
    seen = []
    with models.watch(
        namespace, resource_version=rv, read_timeout=10, metadata_only=True
    ) as stream:
        for ev in stream:
            seen.append(ev)
            if ev["type"] == "DELETED":
                break
    assert [e["type"] for e in seen] == ["ADDED", "DELETED"]
    assert seen[0]["object"] == partial_of(created)
    assert seen[1]["object"]["kind"] == "PartialObjectMetadata"


def test_full_objects_are_reduced_when_a_server_ignores_the_conversion(
    kube: KubeClient, namespace: str
) -> None:
    """A server that answers plain JSON (the last fallback offered) still yields metadata."""
    name = f"{namespace}-n"
    nodes = kube.resource(NODES)
    nodes.create(None, {"metadata": {"name": name}, "status": {"capacity": {"cpu": "4"}}})
    try:
        full = nodes.get(None, name)
        listed = nodes.list(field_selector=f"metadata.name={name}")
    finally:
        nodes.delete(None, name)
    assert as_partial(full) == partial_of(full)
    reduced = as_partial_list(listed)
    assert reduced["kind"] == "PartialObjectMetadataList"
    assert reduced["metadata"] == listed["metadata"]
    assert reduced["items"] == [partial_of(full)]
    # already converted: returned as is
    partial = partial_of(full)
    assert as_partial(partial) is partial
    assert as_partial_list(reduced) is reduced
    event = {"type": "MODIFIED", "object": full}
    assert as_partial_event(event)["object"] == partial
    error = {"type": "ERROR", "object": {"kind": "Status", "code": 410}}
    assert as_partial_event(error) == {"type": "ERROR", "object": {"kind": "Status", "code": 410}}
