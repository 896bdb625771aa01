"""Server-side printing: ``meta.k8s.io`` Tables for ``kubectl get``, over raw HTTP with
kubectl's Accept header and through every kubectl found (see ``test_kubectl``)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from sedna.embedded.apiserver import tables
from sedna.embedded.apiserver.resources import BUILTINS

from .helpers import call, eventually, pod
from .test_kubectl import KUBECTL_PARAMS, Kubectl, kubeconfig_for, make_runner

ApiClient = kubernetes.client.ApiClient
KUBECTL_ACCEPT = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)


def get_raw(
    api_client: ApiClient,
    path: str,
    accept: str = KUBECTL_ACCEPT,
    query: list[tuple[str, Any]] | None = None,
) -> tuple[int, str, Any]:
    """(status, Content-Type, parsed body) of a GET with the given Accept header."""
    params = api_client.param_serialize(
        "GET", path, query_params=query or [], header_params={"Accept": accept}
    )
    resp = api_client.call_api(*params)
    data = resp.read()
    return resp.status, resp.getheader("Content-Type") or "", json.loads(data)


def column_names(table: dict[str, Any], wide: bool = False) -> list[str]:
    return [c["name"] for c in table["columnDefinitions"] if wide or c["priority"] == 0]


def cells(table: dict[str, Any], row: int = 0) -> dict[str, Any]:
    names = column_names(table, wide=True)
    return dict(zip(names, table["rows"][row]["cells"], strict=True))


def running_status(restarts: int = 0) -> dict[str, Any]:
    cs: dict[str, Any] = {
        "name": "main",
        "image": "busybox",
        "ready": True,
        "restartCount": restarts,
        "state": {"running": {"startedAt": "2025-01-01T00:00:00Z"}},
    }
    if restarts:
        cs["lastState"] = {
            "terminated": {"exitCode": 1, "finishedAt": "2025-01-01T00:00:00Z", "reason": "Error"}
        }
    return {
        "phase": "Running",
        "podIP": "10.1.2.3",
        "podIPs": [{"ip": "10.1.2.3"}],
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [cs],
    }


# ---- raw HTTP --------------------------------------------------------------------------
def test_pod_list_as_table(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    core.create_namespaced_pod(namespace, dict(pod("p1"), spec=dict(pod()["spec"], nodeName="n1")))
    status, ctype, table = get_raw(api_client, f"/api/v1/namespaces/{namespace}/pods")
    assert status == 200
    assert ctype.startswith("application/json") and "as=Table" in ctype
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert table["metadata"]["resourceVersion"]
    assert column_names(table) == ["Name", "Ready", "Status", "Restarts", "Age"]
    assert column_names(table, wide=True)[5:7] == ["IP", "Node"]
    row = cells(table)
    assert row["Name"] == "p1" and row["Ready"] == "0/1" and row["Status"] == "Pending"
    assert row["Restarts"] == "0" and row["IP"] == "<none>" and row["Node"] == "n1"
    assert row["Age"].endswith("s")
    obj = table["rows"][0]["object"]
    assert obj["kind"] == "PartialObjectMetadata" and obj["apiVersion"] == "meta.k8s.io/v1"
    assert obj["metadata"]["name"] == "p1" and obj["metadata"]["namespace"] == namespace
    assert "spec" not in obj


def test_status_patch_shows_running_and_restarts(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    core.create_namespaced_pod(namespace, pod("p1"))
    patch_status(api_client, f"/api/v1/namespaces/{namespace}/pods/p1", running_status(restarts=2))
    _, _, table = get_raw(api_client, f"/api/v1/namespaces/{namespace}/pods/p1")
    row = cells(table)
    assert row["Ready"] == "1/1" and row["Status"] == "Running" and row["IP"] == "10.1.2.3"
    assert row["Restarts"].startswith("2 (") and row["Restarts"].endswith(" ago)")
    waiting = {
        "name": "main",
        "ready": False,
        "restartCount": 0,
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
    }
    patch_status(
        api_client,
        f"/api/v1/namespaces/{namespace}/pods/p1",
        {"phase": "Running", "containerStatuses": [waiting]},
    )
    _, _, table = get_raw(api_client, f"/api/v1/namespaces/{namespace}/pods/p1")
    assert cells(table)["Status"] == "CrashLoopBackOff"


def test_include_object_and_versions(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    core.create_namespaced_pod(namespace, pod("p1"))
    path = f"/api/v1/namespaces/{namespace}/pods"
    _, _, full = get_raw(api_client, path, query=[("includeObject", "Object")])
    assert full["rows"][0]["object"]["kind"] == "Pod"
    assert full["rows"][0]["object"]["spec"]["containers"][0]["image"] == "busybox"
    _, _, none = get_raw(api_client, path, query=[("includeObject", "None")])
    assert "object" not in none["rows"][0] or none["rows"][0]["object"] is None
    _, _, beta = get_raw(
        api_client, path, accept="application/json;as=Table;v=v1beta1;g=meta.k8s.io"
    )
    assert beta["apiVersion"] == "meta.k8s.io/v1beta1" and beta["kind"] == "Table"
    _, ctype, plain = get_raw(api_client, path, accept="application/json")
    assert plain["kind"] == "PodList" and "as=Table" not in ctype
    _, _, first = get_raw(
        api_client, path, accept="application/json, application/json;as=Table;v=v1;g=meta.k8s.io"
    )
    assert first["kind"] == "PodList"
    params = api_client.param_serialize(
        "GET",
        path,
        query_params=[("includeObject", "Everything")],
        header_params={"Accept": KUBECTL_ACCEPT},
    )
    assert api_client.call_api(*params).status == 400


def create(api_client: ApiClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST a raw dict (the client's models reject the partial objects tests write)."""
    status, out = call(api_client, "POST", path, body)
    assert status == 201, out
    assert isinstance(out, dict)
    return out


def patch_status(api_client: ApiClient, path: str, status: dict[str, Any]) -> None:
    code, out = call(
        api_client,
        "PATCH",
        path + "/status",
        {"status": status},
        content_type="application/merge-patch+json",
    )
    assert code == 200, out


def test_namespace_node_service_deployment_tables(api_client: ApiClient, namespace: str) -> None:
    _, _, ns = get_raw(api_client, f"/api/v1/namespaces/{namespace}")
    assert column_names(ns) == ["Name", "Status", "Age"] and cells(ns)["Status"] == "Active"

    node = f"n-{uuid.uuid4().hex[:8]}"
    create(
        api_client,
        "/api/v1/nodes",
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": node, "labels": {"node-role.kubernetes.io/edge": ""}},
        },
    )
    try:
        patch_status(
            api_client,
            f"/api/v1/nodes/{node}",
            {
                "conditions": [{"type": "Ready", "status": "True"}],
                "addresses": [{"type": "InternalIP", "address": "192.168.0.9"}],
                "nodeInfo": {"kubeletVersion": "v1.22.6-kubeedge-v1.13.0"},
            },
        )
        _, _, nodes = get_raw(api_client, f"/api/v1/nodes/{node}")
        assert column_names(nodes) == ["Name", "Status", "Roles", "Age", "Version"]
        row = cells(nodes)
        assert row["Status"] == "Ready" and row["Roles"] == "edge"
        assert row["Version"] == "v1.22.6-kubeedge-v1.13.0"
        assert row["Internal-IP"] == "192.168.0.9" and row["External-IP"] == "<none>"
    finally:
        call(api_client, "DELETE", f"/api/v1/nodes/{node}")

    create(
        api_client,
        f"/api/v1/namespaces/{namespace}/services",
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "svc"},
            "spec": {
                "type": "NodePort",
                "selector": {"app": "web"},
                "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53}],
            },
        },
    )
    _, _, svc = get_raw(api_client, f"/api/v1/namespaces/{namespace}/services/svc")
    assert column_names(svc) == ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age"]
    row = cells(svc)
    assert row["Type"] == "NodePort" and row["External-IP"] == "<none>"
    assert row["Port(s)"] == "80:30080/TCP,53/TCP" and row["Selector"] == "app=web"

    tmpl = {"metadata": {"labels": {"app": "web"}}, "spec": pod()["spec"]}
    dep_path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    create(
        api_client,
        dep_path,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "dep"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": tmpl},
        },
    )
    patch_status(api_client, f"{dep_path}/dep", {"readyReplicas": 2, "updatedReplicas": 3})
    _, _, dep = get_raw(api_client, dep_path)
    assert column_names(dep) == ["Name", "Ready", "Up-to-date", "Available", "Age"]
    row = cells(dep)
    assert row["Ready"] == "2/3" and row["Up-to-date"] == 3 and row["Available"] == 0
    assert row["Images"] == "busybox" and row["Selector"] == "app=web"


def test_event_tables(api_client: ApiClient, namespace: str) -> None:
    create(
        api_client,
        f"/api/v1/namespaces/{namespace}/events",
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "ev1"},
            "involvedObject": {
                "kind": "IncrementalLearningJob",
                "name": "job",
                "namespace": namespace,
            },
            "reason": "StageChanged",
            "message": "train started \n",
            "type": "Normal",
            "count": 3,
            "source": {"component": "sedna-gm"},
            "firstTimestamp": "2025-01-01T00:00:00Z",
            "lastTimestamp": "2025-01-01T00:00:00Z",
        },
    )
    _, _, ev = get_raw(api_client, f"/api/v1/namespaces/{namespace}/events")
    assert column_names(ev) == ["Last Seen", "Type", "Reason", "Object", "Message"]
    row = cells(ev)
    assert row["Type"] == "Normal" and row["Reason"] == "StageChanged"
    assert row["Object"] == "incrementallearningjob/job" and row["Message"] == "train started"
    assert row["Count"] == 3 and row["Source"] == "sedna-gm" and row["Name"] == "ev1"
    assert row["Last Seen"].endswith("d")  # 2025 is days ago
    _, _, ev2 = get_raw(api_client, f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")
    assert column_names(ev2) == column_names(ev)


def test_custom_resource_printer_columns(api_client: ApiClient, namespace: str) -> None:
    group = f"t{uuid.uuid4().hex[:8]}.example.com"
    cols = [
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
        {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio"},
        {"name": "Paused", "type": "boolean", "jsonPath": ".spec.paused"},
        {"name": "First", "type": "string", "jsonPath": ".spec.workers[0].name", "priority": 1},
        {
            "name": "Ready",
            "type": "string",
            "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
        },
        {"name": "Last", "type": "string", "jsonPath": ".status.conditions[-1:].type"},
        {"name": "Started", "type": "date", "jsonPath": ".status.startTime"},
        {"name": "Missing", "type": "string", "jsonPath": ".spec.nothing"},
    ]
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                    "additionalPrinterColumns": cols,
                }
            ],
        },
    }
    ext = kubernetes.client.ApiextensionsV1Api(api_client)
    ext.create_custom_resource_definition(crd)
    try:
        co = kubernetes.client.CustomObjectsApi(api_client)
        started = (datetime.now(UTC) - timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = {
            "apiVersion": f"{group}/v1",
            "kind": "Widget",
            "metadata": {"name": "w1"},
            "spec": {"replicas": 2, "ratio": 0.5, "paused": False, "workers": [{"name": "a"}]},
            "status": {
                "phase": "Training",
                "startTime": started,
                "conditions": [
                    {"type": "Ready", "status": "True"},
                    {"type": "Completed", "status": "False"},
                ],
            },
        }
        eventually(lambda: _try_create(co, group, namespace, body))
        _, _, table = get_raw(api_client, f"/apis/{group}/v1/namespaces/{namespace}/widgets")
        assert column_names(table) == [
            "Name",
            "Phase",
            "Replicas",
            "Ratio",
            "Paused",
            "Ready",
            "Last",
            "Started",
            "Missing",
        ]
        row = cells(table)
        assert row == {
            "Name": "w1",
            "Phase": "Training",
            "Replicas": 2,
            "Ratio": 0.5,
            "Paused": False,
            "First": "a",
            "Ready": "True",
            "Last": "Completed",
            "Started": "3h",
            "Missing": None,
        }
        types = {c["name"]: c["type"] for c in table["columnDefinitions"]}
        assert types["Started"] == "date" and types["Replicas"] == "integer"
    finally:
        ext.delete_custom_resource_definition(f"widgets.{group}")


def _try_create(
    co: Any, group: str, namespace: str, body: dict[str, Any], plural: str = "widgets"
) -> bool:
    """Create (a real cluster needs a moment before a new CRD serves its kind)."""
    try:
        co.create_namespaced_custom_object(group, "v1", namespace, plural, body)
    except kubernetes.client.ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def test_a_crd_without_columns_gets_name_and_age(api_client: ApiClient, namespace: str) -> None:
    """Sedna's own CRDs declare no printer columns: kube-apiserver shows Name and Age."""
    group = f"t{uuid.uuid4().hex[:8]}.example.com"
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"models.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "models", "singular": "model", "kind": "Model"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }
    ext = kubernetes.client.ApiextensionsV1Api(api_client)
    ext.create_custom_resource_definition(crd)
    try:
        co = kubernetes.client.CustomObjectsApi(api_client)
        body = {"apiVersion": f"{group}/v1", "kind": "Model", "metadata": {"name": "m"}, "spec": {}}
        eventually(lambda: _try_create(co, group, namespace, body, plural="models"))
        _, _, table = get_raw(api_client, f"/apis/{group}/v1/namespaces/{namespace}/models")
        assert column_names(table) == ["Name", "Age"]
        assert table["rows"][0]["cells"][0] == "m"
    finally:
        ext.delete_custom_resource_definition(f"models.{group}")


def test_watch_as_table(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    core.create_namespaced_pod(namespace, pod("p1"))
    core.create_namespaced_pod(namespace, pod("p2"))
    params = api_client.param_serialize(
        "GET",
        f"/api/v1/namespaces/{namespace}/pods",
        query_params=[("watch", "true"), ("timeoutSeconds", "5")],
        header_params={"Accept": KUBECTL_ACCEPT},
    )
    resp = api_client.call_api(*params, _request_timeout=10)
    events = []
    try:
        for line in resp.response:
            if line.strip():
                events.append(json.loads(line))
            if len(events) == 2:
                break
    finally:
        resp.response.release_conn()
    first, second = (e["object"] for e in events)
    assert first["kind"] == "Table" and first["columnDefinitions"]
    assert second["kind"] == "Table" and second["columnDefinitions"] == []
    assert [first["rows"][0]["cells"][0], second["rows"][0]["cells"][0]] == ["p1", "p2"]


# ---- pure functions --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (125, "2m5s"),
        (599, "9m59s"),
        (600, "10m"),
        (179 * 60, "179m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 1800, "3h30m"),
        (8 * 3600, "8h"),
        (47 * 3600, "47h"),
        (48 * 3600, "2d"),
        (52 * 3600, "2d4h"),
        (8 * 86400, "8d"),
        (729 * 86400, "729d"),
        (730 * 86400, "2y"),
        (731 * 86400, "2y1d"),
        (8 * 365 * 86400, "8y"),
    ],
)
def test_human_duration(seconds: int, text: str) -> None:
    assert tables.human_duration(seconds) == text


def test_jsonpath_subset() -> None:
    obj = {
        "a": {"b.c": 1, "list": [{"k": "x", "v": 1}, {"k": "y", "v": 2}]},
        "labels": {"app.kubernetes.io/name": "gm"},
    }
    ev = tables.eval_jsonpath
    p = tables.parse_jsonpath
    assert ev(p(".a.list[1].k"), obj) == ["y"]
    assert ev(p("{.a.list[-1].v}"), obj) == [2]
    assert ev(p(".a.list[*].k"), obj) == ["x", "y"]
    assert ev(p(".a.list[0:1].k"), obj) == ["x"]
    assert ev(p(".a['b.c']"), obj) == [1]
    assert ev(p(r".labels.app\.kubernetes\.io/name"), obj) == ["gm"]
    assert ev(p('.a.list[?(@.k=="y")].v'), obj) == [2]
    assert ev(p(".a.list[?(@.v>1)].k"), obj) == ["y"]
    assert ev(p(".a.list[5].k"), obj) == []
    assert ev(p(".nope.deeper"), obj) == []
    with pytest.raises(tables.JSONPathError):
        p(".a[")


def test_every_builtin_kind_has_a_table(api_client: ApiClient) -> None:
    """No built-in kind fails to print (kinds without a printer get NAME and AGE)."""
    for rt in BUILTINS:
        scope = "namespaces/default/" if rt.namespaced else ""
        prefix = f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"
        status, _, table = get_raw(api_client, f"{prefix}/{scope}{rt.plural}")
        assert status == 200 and table["kind"] == "Table", rt.plural
        assert table["columnDefinitions"][0]["name"] in ("Name", "Last Seen"), rt.plural


# ---- through kubectl -------------------------------------------------------------------
@pytest.fixture(params=KUBECTL_PARAMS)
def kubectl(request: pytest.FixtureRequest, apiserver: Any, tmp_path: Path, namespace: str) -> Any:
    binary = request.param
    assert binary is not None
    return make_runner(binary, kubeconfig_for(apiserver, tmp_path), namespace, tmp_path)


def _header_and_row(out: str, name: str) -> tuple[list[str], list[str]]:
    lines = out.splitlines()
    row = next(ln for ln in lines if ln.split()[:1] == [name])
    return lines[0].split(), row.split()


def test_kubectl_get_pods_shows_status(
    kubectl: Kubectl, api_client: ApiClient, namespace: str
) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    core.create_namespaced_pod(
        namespace, dict(pod("web"), spec=dict(pod()["spec"], nodeName="edge-0"))
    )
    header, row = _header_and_row(kubectl("get", "pods"), "web")
    assert header == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert row[:4] == ["web", "0/1", "Pending", "0"]
    patch_status(api_client, f"/api/v1/namespaces/{namespace}/pods/web", running_status())
    header, row = _header_and_row(kubectl("get", "pods", "-o", "wide"), "web")
    assert header[:7] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"]
    assert row[:3] == ["web", "1/1", "Running"] and row[5:7] == ["10.1.2.3", "edge-0"]
    _, row = _header_and_row(kubectl("get", "pod", "web", "--show-labels"), "web")
    assert row[2] == "Running"


def test_kubectl_get_il_sample(kubectl: Kubectl, sample_dir: Path, tmp_path: Path) -> None:
    text = (sample_dir / "incrementallearningjob_v1alpha1.yaml").read_text()
    f = tmp_path / "il.yaml"
    f.write_text(text.replace("namespace: default", ""))
    kubectl("apply", "-f", str(f))
    header, row = _header_and_row(kubectl("get", "il"), "helmet-detection-demo")
    # the project's CRDs add Stage and Condition to Sedna's (which has none: Name, Age)
    assert header == ["NAME", "STAGE", "CONDITION", "AGE"]
    assert row[-1].endswith("s")
    out = kubectl("get", "il", "-w", "--request-timeout=1s", check=False)
    assert out.splitlines()[0].split() == ["NAME", "STAGE", "CONDITION", "AGE"]
