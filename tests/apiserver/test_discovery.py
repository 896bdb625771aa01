"""Discovery, OpenAPI, health endpoints and malformed-request answers."""

from __future__ import annotations

import kubernetes
import pytest

from .helpers import call, expect_status

ApiClient = kubernetes.client.ApiClient


def test_version(api_client: ApiClient) -> None:
    info = kubernetes.client.VersionApi(api_client).get_code()
    assert info.major == "1" and info.git_version.startswith("v1.")


def test_core_discovery(api_client: ApiClient) -> None:
    _, api = call(api_client, "GET", "/api")
    assert api["versions"] == ["v1"]
    _, doc = call(api_client, "GET", "/api/v1")
    res = {r["name"]: r for r in doc["resources"]}
    for name in ("pods", "secrets", "services", "events", "nodes", "namespaces", "configmaps"):
        assert "watch" in res[name]["verbs"] and res[name]["kind"]
    assert res["pods"]["shortNames"] == ["po"] and res["pods"]["singularName"] == "pod"
    assert res["nodes"]["namespaced"] is False
    assert res["pods/status"]["verbs"] == ["get", "patch", "update"]


def test_groups_discovery(api_client: ApiClient) -> None:
    _, groups = call(api_client, "GET", "/apis")
    by_name = {g["name"]: g for g in groups["groups"]}
    assert by_name["apps"]["preferredVersion"]["groupVersion"] == "apps/v1"
    assert by_name["autoscaling"]["preferredVersion"]["version"] == "v2"
    assert "coordination.k8s.io" in by_name and "sedna.io" in by_name
    for gv in ("apps/v1", "coordination.k8s.io/v1", "autoscaling/v2", "apiextensions.k8s.io/v1"):
        status, doc = call(api_client, "GET", f"/apis/{gv}")
        assert status == 200 and doc["groupVersion"] == gv


def test_typed_discovery_clients(api_client: ApiClient) -> None:
    groups = kubernetes.client.ApisApi(api_client).get_api_versions()
    assert "sedna.io" in [g.name for g in groups.groups]
    res = kubernetes.client.CoreV1Api(api_client).get_api_resources()
    assert "pods" in [r.name for r in res.resources]


def test_openapi(api_client: ApiClient) -> None:
    _, v3 = call(api_client, "GET", "/openapi/v3")
    assert "api/v1" in v3["paths"] and "apis/sedna.io/v1alpha1" in v3["paths"]
    url = v3["paths"]["apis/sedna.io/v1alpha1"]["serverRelativeURL"]
    status, doc = call(api_client, "GET", url.split("?")[0])
    assert status == 200 and doc["openapi"].startswith("3.")
    status, v2 = call(api_client, "GET", "/openapi/v2")
    assert status == 200 and v2["swagger"] == "2.0"


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/livez"])
def test_health(api_client: ApiClient, path: str) -> None:
    status, body = call(api_client, "GET", path)
    assert status == 200 and body in (b"ok", "ok")


def test_invalid_json_is_400(api_client: ApiClient, namespace: str) -> None:
    st = expect_status(
        api_client,
        400,
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        "{not json",
        content_type="text/plain",
    )
    assert st["reason"] == "BadRequest"


def test_protobuf_body_is_415(api_client: ApiClient, namespace: str) -> None:
    # Protobuf is decoded only for the kinds kubectl creates imperatively (see
    # test_protobuf.py); kubectl >= 1.2x sends other built-in kinds, a Pod here, as
    # protobuf for `kubectl create <kind>` and gets a clear 415 (use `kubectl apply`).
    st = expect_status(
        api_client,
        415,
        "POST",
        f"/api/v1/namespaces/{namespace}/pods",
        "k8s\x00\n\t\n\x02v1\x12\x03Pod",
        content_type="application/vnd.kubernetes.protobuf",
    )
    assert st["reason"] == "UnsupportedMediaType"
    assert "application/json" in st["message"]


def test_unknown_resource_404(api_client: ApiClient) -> None:
    expect_status(api_client, 404, "GET", "/api/v1/namespaces/default/frobs")
    expect_status(api_client, 404, "GET", "/apis/nope.io/v1/things")
    expect_status(api_client, 404, "GET", "/not/an/api")


def test_wrong_method_405(api_client: ApiClient, namespace: str) -> None:
    st = expect_status(
        api_client,
        405,
        "PUT",
        f"/api/v1/namespaces/{namespace}/configmaps",
        {"metadata": {"name": "x"}},
    )
    assert st["reason"] == "MethodNotAllowed"
    expect_status(
        api_client,
        405,
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps/x",
        {"metadata": {"name": "x"}},
    )


def test_invalid_name_422(api_client: ApiClient, namespace: str) -> None:
    st = expect_status(
        api_client,
        422,
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        {"metadata": {"name": "Bad_Name"}},
    )
    assert st["reason"] == "Invalid"
    expect_status(
        api_client, 422, "POST", f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {}}
    )
