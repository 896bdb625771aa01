"""Create/get/list/update/delete of the built-in kinds the GM uses."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import kubernetes
import pytest

from .helpers import api_error, call, expect_status, pod

ApiClient = kubernetes.client.ApiClient


def test_create_sets_server_fields(api_client: ApiClient, namespace: str) -> None:
    _, obj = call(api_client, "POST", f"/api/v1/namespaces/{namespace}/pods", pod("a"))
    meta = obj["metadata"]
    assert meta["uid"] and meta["namespace"] == namespace
    assert int(meta["resourceVersion"]) > 0
    assert meta["generation"] == 1
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", meta["creationTimestamp"])
    datetime.strptime(meta["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ")
    assert obj["kind"] == "Pod" and obj["apiVersion"] == "v1"
    assert obj["status"]["phase"] == "Pending"


def test_kind_and_api_version_defaulted(api_client: ApiClient, namespace: str) -> None:
    body = {"metadata": {"name": "cm"}, "data": {"k": "v"}}
    status, obj = call(api_client, "POST", f"/api/v1/namespaces/{namespace}/configmaps", body)
    assert status == 201
    assert obj["kind"] == "ConfigMap" and obj["apiVersion"] == "v1"


def test_resource_versions_increase(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    rvs = [
        int(
            core.create_namespaced_config_map(
                namespace, {"metadata": {"name": f"c{i}"}}
            ).metadata.resource_version
        )
        for i in range(5)
    ]
    assert rvs == sorted(rvs) and len(set(rvs)) == 5


def test_generate_name(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    names = set()
    for _ in range(5):
        body = pod("")
        body["metadata"] = {"generateName": "job-train-"}
        names.add(core.create_namespaced_pod(namespace, body).metadata.name)
    assert len(names) == 5
    for n in names:
        assert re.fullmatch(r"job-train-[bcdfghjklmnpqrstvwxz2456789]{5}", n)


def test_already_exists(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    core.create_namespaced_pod(namespace, pod("dup"))
    exc = api_error(lambda: core.create_namespaced_pod(namespace, pod("dup")))
    assert exc.status == 409
    body = kubernetes.client.ApiClient().sanitize_for_serialization({})
    import json

    body = json.loads(exc.body)
    assert body["reason"] == "AlreadyExists" and body["kind"] == "Status"
    assert body["details"]["name"] == "dup" and body["details"]["kind"] == "pods"


def test_missing_namespace_is_404(api_client: ApiClient) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    exc = api_error(lambda: core.create_namespaced_pod("no-such-ns-x", pod("a")))
    assert exc.status == 404


def test_default_and_kube_system_exist(api_client: ApiClient) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    assert core.read_namespace("default").status.phase == "Active"
    assert core.read_namespace("kube-system").metadata.name == "kube-system"


def test_namespace_mismatch_is_400(api_client: ApiClient, namespace: str) -> None:
    body = pod("a", namespace="other")
    st = expect_status(api_client, 400, "POST", f"/api/v1/namespaces/{namespace}/pods", body)
    assert st["reason"] == "BadRequest"


def test_body_namespace_matching_url_ok(api_client: ApiClient, namespace: str) -> None:
    status, obj = call(
        api_client, "POST", f"/api/v1/namespaces/{namespace}/pods", pod("a", namespace=namespace)
    )
    assert status == 201 and obj["metadata"]["namespace"] == namespace


def test_pod_node_name_and_get(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    body = pod("n")
    body["spec"]["nodeName"] = "edge-1"
    core.create_namespaced_pod(namespace, body)
    assert core.read_namespaced_pod("n", namespace).spec.node_name == "edge-1"


def test_get_missing_is_404_status(api_client: ApiClient, namespace: str) -> None:
    st = expect_status(api_client, 404, "GET", f"/api/v1/namespaces/{namespace}/pods/nope")
    assert st == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "nope" not found',
        "reason": "NotFound",
        "details": {"name": "nope", "kind": "pods"},
        "code": 404,
    }


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/v1/namespaces/{ns}/secrets", {"metadata": {"name": "s"}, "data": {"a": "Yg=="}}),
        (
            "/api/v1/namespaces/{ns}/services",
            {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}},
        ),
        (
            "/api/v1/namespaces/{ns}/events",
            {
                "metadata": {"name": "e.1"},
                "involvedObject": {"kind": "Pod", "name": "p"},
                "reason": "X",
            },
        ),
        ("/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "c"}, "data": {"x": "y"}}),
        (
            "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
            {"metadata": {"name": "l"}, "spec": {"holderIdentity": "me"}},
        ),
        (
            "/apis/apps/v1/namespaces/{ns}/deployments",
            {
                "metadata": {"name": "d"},
                "spec": {
                    "selector": {"matchLabels": {"a": "b"}},
                    "template": {
                        "metadata": {"labels": {"a": "b"}},
                        "spec": {"containers": [{"name": "c", "image": "i"}]},
                    },
                },
            },
        ),
        (
            "/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers",
            {
                "metadata": {"name": "h"},
                "spec": {
                    "maxReplicas": 3,
                    "scaleTargetRef": {"kind": "Deployment", "name": "d", "apiVersion": "apps/v1"},
                },
            },
        ),
    ],
)
def test_crud_builtin_kinds(
    api_client: ApiClient, namespace: str, path: str, body: dict[str, Any]
) -> None:
    coll = path.format(ns=namespace)
    name = body["metadata"]["name"]
    status, created = call(api_client, "POST", coll, body)
    assert status == 201
    _, got = call(api_client, "GET", f"{coll}/{name}")
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    _, listed = call(api_client, "GET", coll)
    assert [i["metadata"]["name"] for i in listed["items"]] == [name]
    got["metadata"]["labels"] = {"x": "y"}
    status, upd = call(api_client, "PUT", f"{coll}/{name}", got)
    assert status == 200 and upd["metadata"]["labels"] == {"x": "y"}
    assert int(upd["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    status, _ = call(api_client, "DELETE", f"{coll}/{name}")
    assert status == 200
    expect_status(api_client, 404, "GET", f"{coll}/{name}")


def test_typed_clients(api_client: ApiClient, namespace: str) -> None:
    apps = kubernetes.client.AppsV1Api(api_client)
    dep = {
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
        },
    }
    apps.create_namespaced_deployment(namespace, dep)
    assert apps.read_namespaced_deployment("d", namespace).spec.replicas == 1
    coord = kubernetes.client.CoordinationV1Api(api_client)
    coord.create_namespaced_lease(
        namespace, {"metadata": {"name": "gm"}, "spec": {"holderIdentity": "a"}}
    )
    lease = coord.read_namespaced_lease("gm", namespace)
    lease.spec.holder_identity = "b"
    assert coord.replace_namespaced_lease("gm", namespace, lease).spec.holder_identity == "b"
    hpa = kubernetes.client.AutoscalingV2Api(api_client)
    hpa.create_namespaced_horizontal_pod_autoscaler(
        namespace,
        {
            "metadata": {"name": "h"},
            "spec": {"maxReplicas": 2, "scaleTargetRef": {"kind": "Deployment", "name": "d"}},
        },
    )
    assert hpa.read_namespaced_horizontal_pod_autoscaler("h", namespace).spec.max_replicas == 2


def test_nodes_cluster_scoped(api_client: ApiClient) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    name = "edge-node-crud"
    core.create_node({"metadata": {"name": name, "labels": {"role": "edge"}}})
    try:
        assert core.read_node(name).metadata.namespace is None
        assert name in [n.metadata.name for n in core.list_node(label_selector="role=edge").items]
    finally:
        core.delete_node(name)


def test_list_all_namespaces(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    core.create_namespaced_pod(namespace, pod("a", labels={"suite": namespace}))
    pods = core.list_pod_for_all_namespaces(label_selector=f"suite={namespace}").items
    assert [(p.metadata.namespace, p.metadata.name) for p in pods] == [(namespace, "a")]


def test_list_resource_version_is_current(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    created = core.create_namespaced_pod(namespace, pod("a"))
    listed = core.list_namespaced_pod(namespace)
    assert int(listed.metadata.resource_version) >= int(created.metadata.resource_version)


def test_limit_and_continue_do_not_break(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    for i in range(3):
        core.create_namespaced_pod(namespace, pod(f"p{i}"))
    first = core.list_namespaced_pod(namespace, limit=2)
    names = [p.metadata.name for p in first.items]
    if first.metadata._continue:
        names += [
            p.metadata.name
            for p in core.list_namespaced_pod(
                namespace, limit=2, _continue=first.metadata._continue
            ).items
        ]
    assert sorted(names) == ["p0", "p1", "p2"]
