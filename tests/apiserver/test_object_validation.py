"""Malformed built-in objects and metadata are a 422 naming the field, on every write.

kube decodes built-in kinds into typed structs and validates container names; the
embedded server stores JSON, so it checks the shape itself. A ConfigMap with
`data: 5` once made every Table list of the namespace's ConfigMaps a 500, a Pod with
`ownerReferences: "nope"` a 500, and a container named `../../x` was accepted.
"""

from __future__ import annotations

import json
import os
from typing import Any

import kubernetes
import pytest

from .helpers import api_error, call, expect_status, pod

ApiClient = kubernetes.client.ApiClient
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
SMP = "application/strategic-merge-patch+json"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

# kube refuses wrong types at decode, with a 400; this server answers 422 naming the field
embedded_only = pytest.mark.skipif(
    bool(os.environ.get("SEDNA_TEST_KUBECONFIG")),
    reason="the embedded server's answer to a wrongly typed field (kube: 400 at decode)",
)


def fields(status: dict[str, Any]) -> list[str]:
    """The `.details.causes[].field` of a Status."""
    assert status["reason"] == "Invalid", status
    return [c["field"] for c in status["details"]["causes"]]


def _table(api_client: ApiClient, path: str) -> tuple[int, Any]:
    params = api_client.param_serialize("GET", path, header_params={"Accept": TABLE})
    resp = api_client.call_api(*params)
    return resp.status, json.loads(resp.read())


@embedded_only
def test_configmap_data_of_the_wrong_type_is_refused_by_every_write(
    api_client: ApiClient, namespace: str
) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    cm_body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": 5}
    body = expect_status(api_client, 422, "POST", path, cm_body)
    assert fields(body) == ["data"]
    assert body["message"].startswith('ConfigMap "c" is invalid: data: Invalid value: 5')

    core.create_namespaced_config_map(namespace, {"metadata": {"name": "c"}, "data": {"k": "v"}})
    cm = core.read_namespaced_config_map("c", namespace).to_dict()
    status = expect_status(
        api_client, 422, "PUT", f"{path}/c", {"metadata": {"name": "c"}, "data": 5}
    )
    assert fields(status) == ["data"]
    for ctype, patch, field in [
        (MERGE, {"data": 5}, "data"),
        (JSON_PATCH, [{"op": "replace", "path": "/data", "value": 5}], "data"),
        (SMP, {"data": 5}, "data"),
        (MERGE, {"data": {"k": 7}}, "data[k]"),
        (SMP, {"binaryData": ["x"]}, "binaryData"),
    ]:
        status = expect_status(api_client, 422, "PATCH", f"{path}/c", patch, content_type=ctype)
        assert fields(status) == [field], (ctype, patch)
    # nothing was stored, and `kubectl get cm` still lists the namespace
    after = core.read_namespaced_config_map("c", namespace).to_dict()
    assert after["data"] == {"k": "v"}
    assert after["metadata"]["resource_version"] == cm["metadata"]["resource_version"]
    code, table = _table(api_client, path)
    assert code == 200 and [r["cells"][0] for r in table["rows"]] == ["c"]


@embedded_only
@pytest.mark.parametrize(
    ("meta", "field"),
    [
        ({"ownerReferences": "nope"}, "metadata.ownerReferences"),
        ({"ownerReferences": [5]}, "metadata.ownerReferences[0]"),
        (
            {"ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "o"}]},
            "metadata.ownerReferences[0].uid",
        ),
        (
            {"ownerReferences": [{"apiVersion": "v1", "kind": 3, "name": "o", "uid": "u"}]},
            "metadata.ownerReferences[0].kind",
        ),
        ({"labels": {"app": 1}}, "metadata.labels[app]"),
        ({"labels": ["a"]}, "metadata.labels"),
        ({"annotations": 5}, "metadata.annotations"),
        ({"finalizers": "x"}, "metadata.finalizers"),
        ({"finalizers": [1]}, "metadata.finalizers[0]"),
    ],
)
def test_malformed_metadata_is_refused(
    meta: dict[str, Any], field: str, api_client: ApiClient, namespace: str
) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    pods = f"/api/v1/namespaces/{namespace}/pods"
    assert fields(expect_status(api_client, 422, "POST", pods, pod("p", **meta))) == [field]
    # the same through a patch of a valid object
    core.create_namespaced_pod(namespace, pod("p"))
    status = expect_status(
        api_client,
        422,
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/p",
        {"metadata": meta},
        content_type=MERGE,
    )
    assert fields(status) == [field]
    assert core.list_namespaced_pod(namespace).items[0].metadata.owner_references is None


@embedded_only
def test_metadata_of_custom_resources_is_checked_and_their_schema_still_applies(
    api_client: ApiClient, namespace: str
) -> None:
    path = f"/apis/sedna.io/v1alpha1/namespaces/{namespace}/models"
    model = {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "Model",
        "metadata": {"name": "m", "labels": {"a": ["b"]}},
        "spec": {"url": "/m", "format": "pb"},
    }
    status = expect_status(api_client, 422, "POST", path, model)
    assert fields(status) == ["metadata.labels[a]"]
    model["metadata"] = {"name": "m", "labels": {"a": "b"}}
    code, created = call(api_client, "POST", path, model)
    assert code == 201, created
    status = expect_status(
        api_client, 422, "PATCH", f"{path}/m", {"metadata": {"finalizers": 5}}, content_type=MERGE
    )
    assert fields(status) == ["metadata.finalizers"]


@embedded_only
def test_pod_and_node_fields_of_the_wrong_type(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    bad = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p2"},
        "spec": {"nodeName": ["edge-node"], "containers": "c", "volumes": 7},
    }
    pods = f"/api/v1/namespaces/{namespace}/pods"
    status = expect_status(api_client, 422, "POST", pods, bad)
    assert fields(status) == ["spec.containers", "spec.nodeName", "spec.volumes"]
    bad["spec"] = {"containers": [{"name": "c", "image": 5, "env": [{"value": "x"}]}]}
    assert fields(expect_status(api_client, 422, "POST", pods, bad)) == [
        "spec.containers[0].image",
        "spec.containers[0].env[0].name",
    ]

    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "garbage-node"},
        "status": {"addresses": "1.2.3.4", "conditions": 5},
    }
    status = expect_status(api_client, 422, "POST", "/api/v1/nodes", node)
    assert fields(status) == ["status.conditions", "status.addresses"]
    # a valid node, then its /status written badly by PUT and by each patch type
    core.create_node({"metadata": {"name": "garbage-node"}})
    try:
        current = core.read_node("garbage-node").to_dict()
        body = {"metadata": {"name": "garbage-node"}, "status": {"conditions": 5}}
        put = expect_status(api_client, 422, "PUT", "/api/v1/nodes/garbage-node/status", body)
        assert fields(put) == ["status.conditions"]
        for ctype, patch in [
            (MERGE, {"status": {"conditions": [{"type": 1}]}}),
            (SMP, {"status": {"conditions": [{"type": 1}]}}),
            (
                JSON_PATCH,
                [{"op": "add", "path": "/status", "value": {"conditions": [{"type": 1}]}}],
            ),
        ]:
            status = expect_status(
                api_client,
                422,
                "PATCH",
                "/api/v1/nodes/garbage-node/status",
                patch,
                content_type=ctype,
            )
            assert fields(status) == ["status.conditions[0].type"], ctype
        after = core.read_node("garbage-node").to_dict()
        assert after["metadata"]["resource_version"] == current["metadata"]["resource_version"]
    finally:
        core.delete_node("garbage-node")


@pytest.mark.parametrize("name", ["../../../../tmp/pwned", "UPPER_case", "a.b", "-x", "x" * 64])
def test_container_names_must_be_dns_labels(
    name: str, api_client: ApiClient, namespace: str
) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    bad = pod("trav")
    bad["spec"]["containers"] = [{"name": name, "image": "busybox"}]
    exc = api_error(lambda: core.create_namespaced_pod(namespace, bad))
    assert exc.status == 422
    status = json.loads(exc.body)
    assert fields(status) == ["spec.containers[0].name"]
    assert "RFC 1123 label" in status["message"]
    # nor through a strategic merge patch adding a container, nor in a Deployment
    core.create_namespaced_pod(namespace, pod("trav"))
    status = expect_status(
        api_client,
        422,
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/trav",
        {"spec": {"containers": [{"name": name, "image": "busybox"}]}},
        content_type=SMP,
    )
    assert fields(status) == ["spec.containers[1].name"]
    apps = kubernetes.client.AppsV1Api(api_client)
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": name, "image": "busybox"}]},
            },
        },
    }
    exc = api_error(lambda: apps.create_namespaced_deployment(namespace, deploy))
    assert exc.status == 422
    assert fields(json.loads(exc.body)) == ["spec.template.spec.containers[0].name"]


def test_duplicate_container_names_are_refused(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    bad = pod("dup")
    bad["spec"]["initContainers"] = [{"name": "main", "image": "busybox"}]
    exc = api_error(lambda: core.create_namespaced_pod(namespace, bad))
    assert exc.status == 422
    assert fields(json.loads(exc.body)) == ["spec.initContainers[0].name"]


def test_valid_objects_keep_working(api_client: ApiClient, namespace: str) -> None:
    """What the GM, the kubelet and Deployment stand-ins and kubectl write still goes in."""
    core = kubernetes.client.CoreV1Api(api_client)
    full = pod(
        "ok",
        labels={"app": "x"},
        annotations={"kubectl.kubernetes.io/last-applied-configuration": "{}"},
        finalizers=["example.com/keep"],
    )
    full["spec"] = {
        "nodeName": "edge-node",
        "restartPolicy": "OnFailure",
        "nodeSelector": {"kubernetes.io/hostname": "edge-node"},
        "containers": [
            {
                "name": "train-worker",
                "image": "kubeedge/sedna-example:v0.1.0",
                "imagePullPolicy": "IfNotPresent",
                "args": ["train.py"],
                "env": [{"name": "epochs", "value": "1"}, {"name": "A", "valueFrom": {}}],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                "resources": {"limits": {"memory": "2Gi"}},
            }
        ],
        "volumes": [{"name": "data", "hostPath": {"path": "/data", "type": "Directory"}}],
    }
    created = core.create_namespaced_pod(namespace, full).to_dict()
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u-1", "controller": True}
    code, patched = call(
        api_client,
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/ok",
        {
            "metadata": {"ownerReferences": [owner]},
            "spec": {"containers": [{"name": "side", "image": "b"}]},
        },
        content_type=SMP,
    )
    assert code == 200, patched
    assert [c["name"] for c in patched["spec"]["containers"]] == ["train-worker", "side"]
    status = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [
            {"name": "train-worker", "ready": True, "restartCount": 0, "state": {"running": {}}}
        ],
    }
    code, out = call(
        api_client,
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/ok/status",
        {"status": status},
        content_type=MERGE,
    )
    assert code == 200, out
    assert out["status"]["phase"] == "Running"
    assert created["metadata"]["uid"] == out["metadata"]["uid"]
    core.create_namespaced_secret(
        namespace, {"metadata": {"name": "s"}, "data": {"a": "Yg=="}, "type": "Opaque"}
    )
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "c"}, "data": {"k": "v"}})
    code, table = _table(api_client, f"/api/v1/namespaces/{namespace}/configmaps")
    assert code == 200 and table["rows"][0]["cells"][:2] == ["c", 1]
