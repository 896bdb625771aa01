"""Label and field selectors on list (and the 400 for a malformed one)."""

from __future__ import annotations

import kubernetes
import pytest

from .helpers import expect_status, pod

ApiClient = kubernetes.client.ApiClient


@pytest.fixture()
def labelled(api_client: ApiClient, namespace: str) -> str:
    core = kubernetes.client.CoreV1Api(api_client)
    specs = {
        "a": {"app": "x", "tier": "web"},
        "b": {"app": "y", "tier": "web"},
        "c": {"app": "z"},
        "d": {},
    }
    for name, labels in specs.items():
        body = pod(name, labels=labels)
        if name in ("a", "c"):
            body["spec"]["nodeName"] = "edge-1"
        core.create_namespaced_pod(namespace, body)
    return namespace


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=x", ["a"]),
        ("app==x", ["a"]),
        ("app!=x", ["b", "c", "d"]),
        ("app in (x,y)", ["a", "b"]),
        ("app notin (x, y)", ["c", "d"]),
        ("tier", ["a", "b"]),
        ("!tier", ["c", "d"]),
        ("tier=web,app=y", ["b"]),
        ("app in (x,z),!tier", ["c"]),
        ("", ["a", "b", "c", "d"]),
    ],
)
def test_label_selectors(
    api_client: ApiClient, labelled: str, selector: str, expected: list[str]
) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    got = core.list_namespaced_pod(labelled, label_selector=selector).items
    assert sorted(p.metadata.name for p in got) == expected


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("metadata.name=b", ["b"]),
        ("metadata.name!=b", ["a", "c", "d"]),
        ("spec.nodeName=edge-1", ["a", "c"]),
        ("spec.nodeName=", ["b", "d"]),
        ("status.phase=Pending", ["a", "b", "c", "d"]),
        ("status.phase!=Pending", []),
        ("spec.nodeName=edge-1,metadata.name=c", ["c"]),
    ],
)
def test_field_selectors(
    api_client: ApiClient, labelled: str, selector: str, expected: list[str]
) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    got = core.list_namespaced_pod(labelled, field_selector=selector).items
    assert sorted(p.metadata.name for p in got) == expected


def test_field_selector_namespace_across_namespaces(api_client: ApiClient, labelled: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    got = core.list_pod_for_all_namespaces(field_selector=f"metadata.namespace={labelled}").items
    assert sorted(p.metadata.name for p in got) == ["a", "b", "c", "d"]


@pytest.mark.parametrize("selector", ["app in (x", "a=b)", "=x", "app=(x)"])
def test_bad_label_selector_is_400(api_client: ApiClient, namespace: str, selector: str) -> None:
    st = expect_status(
        api_client,
        400,
        "GET",
        f"/api/v1/namespaces/{namespace}/pods",
        query=[("labelSelector", selector)],
    )
    assert st["reason"] == "BadRequest"


def test_unsupported_field_is_400(api_client: ApiClient, namespace: str) -> None:
    expect_status(
        api_client,
        400,
        "GET",
        f"/api/v1/namespaces/{namespace}/pods",
        query=[("fieldSelector", "spec.bogus=1")],
    )
