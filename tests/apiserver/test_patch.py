"""PATCH in the three formats, on objects and on /status."""

from __future__ import annotations

from typing import Any

import kubernetes
import pytest

from .helpers import call, expect_status, pod

ApiClient = kubernetes.client.ApiClient
MERGE = "application/merge-patch+json"
JSON = "application/json-patch+json"
SMP = "application/strategic-merge-patch+json"


def _patch(api_client: ApiClient, path: str, body: Any, ctype: str) -> dict[str, Any]:
    status, out = call(api_client, "PATCH", path, body, content_type=ctype)
    assert status == 200, out
    assert isinstance(out, dict)
    return out


def test_merge_patch(api_client: ApiClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    call(
        api_client,
        "POST",
        path,
        {"metadata": {"name": "c", "labels": {"a": "1", "b": "2"}}, "data": {"x": "1"}},
    )
    out = _patch(
        api_client,
        f"{path}/c",
        {"metadata": {"labels": {"a": None, "c": "3"}}, "data": {"y": "2"}},
        MERGE,
    )
    assert out["metadata"]["labels"] == {"b": "2", "c": "3"}
    assert out["data"] == {"x": "1", "y": "2"}


def test_json_patch_ops(api_client: ApiClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    call(api_client, "POST", path, {"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}})
    ops = [
        {"op": "test", "path": "/data/a", "value": "1"},
        {"op": "add", "path": "/data/c", "value": "3"},
        {"op": "remove", "path": "/data/b"},
        {"op": "replace", "path": "/data/a", "value": "10"},
        {"op": "copy", "from": "/data/a", "path": "/data/d"},
        {"op": "move", "from": "/data/c", "path": "/data/e~1f"},
        {"op": "add", "path": "/metadata/labels", "value": {"k": "v"}},
    ]
    out = _patch(api_client, f"{path}/c", ops, JSON)
    assert out["data"] == {"a": "10", "d": "10", "e/f": "3"}
    assert out["metadata"]["labels"] == {"k": "v"}


def test_json_patch_failed_test_is_422(api_client: ApiClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    call(api_client, "POST", path, {"metadata": {"name": "c"}, "data": {"a": "1"}})
    expect_status(
        api_client,
        422,
        "PATCH",
        f"{path}/c",
        [{"op": "test", "path": "/data/a", "value": "2"}],
        content_type=JSON,
    )
    _, got = call(api_client, "GET", f"{path}/c")
    assert got["data"] == {"a": "1"}


def test_json_patch_array_ops(api_client: ApiClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/pods"
    call(api_client, "POST", path, pod("a"))
    ops = [
        {"op": "add", "path": "/spec/containers/-", "value": {"name": "side", "image": "x"}},
        {"op": "replace", "path": "/spec/containers/0/image", "value": "new"},
    ]
    out = _patch(api_client, f"{path}/a", ops, JSON)
    assert [(c["name"], c["image"]) for c in out["spec"]["containers"]] == [
        ("main", "new"),
        ("side", "x"),
    ]


def test_strategic_merge_containers_by_name(api_client: ApiClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/pods"
    body = pod("a")
    body["spec"]["containers"] = [
        {
            "name": "main",
            "image": "i1",
            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
            "ports": [{"containerPort": 80}],
            "volumeMounts": [{"name": "v", "mountPath": "/v"}],
        },
        {"name": "side", "image": "s1"},
    ]
    body["spec"]["volumes"] = [{"name": "v", "emptyDir": {}}]
    body["spec"]["tolerations"] = [{"key": "a"}]
    call(api_client, "POST", path, body)
    patch = {
        "metadata": {"labels": {"l": "1"}},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "i2",
                    "env": [{"name": "B", "value": "20"}, {"name": "C", "value": "3"}],
                    "ports": [{"containerPort": 81}],
                },
                {"name": "side", "$patch": "delete"},
            ],
            "volumes": [{"name": "w", "emptyDir": {}}],
            "tolerations": [{"key": "b"}],
        },
    }
    out = _patch(api_client, f"{path}/a", patch, SMP)
    cs = out["spec"]["containers"]
    assert [c["name"] for c in cs] == ["main"]
    assert cs[0]["image"] == "i2"
    assert cs[0]["env"] == [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "20"},
        {"name": "C", "value": "3"},
    ]
    assert [p["containerPort"] for p in cs[0]["ports"]] == [80, 81]
    assert cs[0]["volumeMounts"] == [{"name": "v", "mountPath": "/v"}]
    assert [v["name"] for v in out["spec"]["volumes"]] == ["v", "w"]
    assert out["spec"]["tolerations"] == [{"key": "b"}]  # no merge key: replaced
    assert out["metadata"]["labels"] == {"l": "1"}


def test_strategic_patch_replace_directive(api_client: ApiClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    call(api_client, "POST", path, {"metadata": {"name": "c", "labels": {"a": "1", "b": "2"}}})
    out = _patch(
        api_client, f"{path}/c", {"metadata": {"labels": {"$patch": "replace", "z": "9"}}}, SMP
    )
    assert out["metadata"]["labels"] == {"z": "9"}


def test_strategic_patch_conditions_by_type_on_status(
    api_client: ApiClient, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/pods"
    call(api_client, "POST", path, pod("a"))
    _patch(
        api_client,
        f"{path}/a/status",
        {
            "status": {
                "conditions": [
                    {"type": "Ready", "status": "False"},
                    {"type": "Init", "status": "True"},
                ]
            }
        },
        SMP,
    )
    out = _patch(
        api_client,
        f"{path}/a/status",
        {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
        SMP,
    )
    assert out["status"]["phase"] == "Running"
    assert out["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "Init", "status": "True"},
    ]


def test_merge_patch_on_status_subresource(api_client: ApiClient, namespace: str) -> None:
    path = f"/apis/sedna.io/v1alpha1/namespaces/{namespace}/models"
    call(
        api_client, "POST", path, {"metadata": {"name": "m"}, "spec": {"url": "u", "format": "pb"}}
    )
    out = _patch(
        api_client,
        f"{path}/m/status",
        {"status": {"metrics": [{"key": "acc", "value": "0.9"}]}, "spec": {"url": "x"}},
        MERGE,
    )
    assert out["status"]["metrics"][0]["key"] == "acc"
    assert out["spec"]["url"] == "u"
    out = _patch(api_client, f"{path}/m", {"spec": {"url": "v"}, "status": {"metrics": []}}, MERGE)
    assert out["spec"]["url"] == "v" and out["status"]["metrics"][0]["key"] == "acc"
    assert out["metadata"]["generation"] == 2


def test_custom_objects_api_patch(api_client: ApiClient, namespace: str) -> None:
    co = kubernetes.client.CustomObjectsApi(api_client)
    args = ("sedna.io", "v1alpha1", namespace, "models")
    co.create_namespaced_custom_object(
        *args,
        {
            "apiVersion": "sedna.io/v1alpha1",
            "kind": "Model",
            "metadata": {"name": "m"},
            "spec": {"url": "u", "format": "pb"},
        },
    )
    out = co.patch_namespaced_custom_object(*args, "m", {"metadata": {"labels": {"a": "b"}}})
    assert out["metadata"]["labels"] == {"a": "b"}
    out = co.patch_namespaced_custom_object_status(
        *args, "m", {"status": {"metrics": [{"key": "k", "value": "v"}]}}
    )
    assert out["status"]["metrics"] == [{"key": "k", "value": "v"}]


def test_patch_with_stale_rv_conflicts(api_client: ApiClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    call(api_client, "POST", path, {"metadata": {"name": "c"}})
    expect_status(
        api_client,
        409,
        "PATCH",
        f"{path}/c",
        {"metadata": {"resourceVersion": "1", "labels": {"a": "b"}}},
        content_type=MERGE,
    )


def test_strategic_patch_on_custom_resource_is_415(api_client: ApiClient, namespace: str) -> None:
    path = f"/apis/sedna.io/v1alpha1/namespaces/{namespace}/models"
    call(
        api_client, "POST", path, {"metadata": {"name": "m"}, "spec": {"url": "u", "format": "pb"}}
    )
    expect_status(api_client, 415, "PATCH", f"{path}/m", {"spec": {}}, content_type=SMP)


@pytest.mark.parametrize("ctype", ["application/apply-patch+yaml", "text/plain"])
def test_unsupported_patch_types_415(api_client: ApiClient, namespace: str, ctype: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    call(api_client, "POST", path, {"metadata": {"name": "c"}})
    body: Any = {"data": {}} if "json" in ctype or "yaml" in ctype else '{"data": {}}'
    st = expect_status(api_client, 415, "PATCH", f"{path}/c", body, content_type=ctype)
    assert st["reason"] == "UnsupportedMediaType"


def test_patch_missing_is_404(api_client: ApiClient, namespace: str) -> None:
    expect_status(
        api_client,
        404,
        "PATCH",
        f"/api/v1/namespaces/{namespace}/configmaps/none",
        {"data": {}},
        content_type=MERGE,
    )
