"""The fixtures work end to end: namespace, create, get, list through the client."""

from __future__ import annotations

import kubernetes

from .helpers import pod


def test_pod_roundtrip(api_client: kubernetes.client.ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    created = core.create_namespaced_pod(namespace, pod("a"))
    assert created.metadata.uid
    got = core.read_namespaced_pod("a", namespace)
    assert got.status.phase == "Pending"
    assert [p.metadata.name for p in core.list_namespaced_pod(namespace).items] == ["a"]


def test_custom_object(api_client: kubernetes.client.ApiClient, namespace: str) -> None:
    co = kubernetes.client.CustomObjectsApi(api_client)
    body = {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "Model",
        "metadata": {"name": "m"},
        "spec": {"url": "s3://x", "format": "pb"},
    }
    co.create_namespaced_custom_object("sedna.io", "v1alpha1", namespace, "models", body)
    got = co.get_namespaced_custom_object("sedna.io", "v1alpha1", namespace, "models", "m")
    assert got["spec"] == body["spec"]
