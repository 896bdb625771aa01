"""DELETE: responses, finalizers, owner-reference GC in all three policies, namespaces."""

from __future__ import annotations

import uuid
from typing import Any

import kubernetes

from .helpers import call, eventually, expect_status, pod

ApiClient = kubernetes.client.ApiClient


def _owner_ref(owner: dict[str, Any], block: bool = False) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": block,
    }


def _job_with_pods(api_client: ApiClient, ns: str, block: bool = False) -> tuple[str, str]:
    jobs = f"/apis/sedna.io/v1alpha1/namespaces/{ns}/incrementallearningjobs"
    _, job = call(
        api_client,
        "POST",
        jobs,
        {"metadata": {"name": "job"}, "spec": {"dataset": {"name": "d", "trainProb": 0.5}}},
    )
    pods = f"/api/v1/namespaces/{ns}/pods"
    for n in ("w1", "w2"):
        call(api_client, "POST", pods, pod(n, ownerReferences=[_owner_ref(job, block)]))
    return jobs, pods


def _names(api_client: ApiClient, path: str) -> list[str]:
    _, lst = call(api_client, "GET", path)
    return [i["metadata"]["name"] for i in lst["items"]]


def test_delete_returns_status_for_custom_resource(api_client: ApiClient, namespace: str) -> None:
    path = f"/apis/sedna.io/v1alpha1/namespaces/{namespace}/models"
    call(api_client, "POST", path, {"metadata": {"name": "m"}, "spec": {"url": "u", "format": "f"}})
    status, body = call(api_client, "DELETE", f"{path}/m")
    assert status == 200
    assert body["kind"] == "Status" and body["status"] == "Success"
    assert body["details"]["name"] == "m" and body["details"]["group"] == "sedna.io"


def test_delete_pod_returns_object(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    core.create_namespaced_pod(namespace, pod("a"))
    out = core.delete_namespaced_pod(
        "a", namespace, body=kubernetes.client.V1DeleteOptions(grace_period_seconds=0)
    )
    assert out.metadata.name == "a"
    assert api_error_code(lambda: core.read_namespaced_pod("a", namespace)) == 404


def api_error_code(fn: Any) -> int:
    try:
        fn()
    except kubernetes.client.ApiException as exc:
        return int(exc.status)
    return 200


def test_delete_missing_is_404(api_client: ApiClient, namespace: str) -> None:
    expect_status(api_client, 404, "DELETE", f"/api/v1/namespaces/{namespace}/pods/none")


def test_delete_precondition_conflict(api_client: ApiClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    call(api_client, "POST", path, {"metadata": {"name": "c"}})
    expect_status(api_client, 409, "DELETE", f"{path}/c", {"preconditions": {"uid": "wrong"}})


def test_finalizers_hold_deletion(api_client: ApiClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    call(api_client, "POST", path, {"metadata": {"name": "c", "finalizers": ["example.com/keep"]}})
    status, _body = call(api_client, "DELETE", f"{path}/c")
    assert status in (200, 202)
    _, cm = call(api_client, "GET", f"{path}/c")
    assert cm["metadata"]["deletionTimestamp"]
    cm["metadata"]["finalizers"] = []
    status, _ = call(api_client, "PUT", f"{path}/c", cm)
    assert status == 200
    eventually(lambda: call(api_client, "GET", f"{path}/c")[0] == 404)


def test_finalizer_removed_by_patch(api_client: ApiClient, namespace: str) -> None:
    path = f"/apis/sedna.io/v1alpha1/namespaces/{namespace}/models"
    call(
        api_client,
        "POST",
        path,
        {
            "metadata": {"name": "m", "finalizers": ["sedna.io/x"]},
            "spec": {"url": "u", "format": "f"},
        },
    )
    call(api_client, "DELETE", f"{path}/m")
    assert call(api_client, "GET", f"{path}/m")[0] == 200
    call(
        api_client,
        "PATCH",
        f"{path}/m",
        {"metadata": {"finalizers": None}},
        content_type="application/merge-patch+json",
    )
    eventually(lambda: call(api_client, "GET", f"{path}/m")[0] == 404)


def test_gc_background(api_client: ApiClient, namespace: str) -> None:
    jobs, pods = _job_with_pods(api_client, namespace)
    status, _ = call(api_client, "DELETE", f"{jobs}/job", {"propagationPolicy": "Background"})
    assert status == 200
    eventually(lambda: _names(api_client, pods) == [])


def test_gc_default_policy_is_background(api_client: ApiClient, namespace: str) -> None:
    jobs, pods = _job_with_pods(api_client, namespace)
    call(api_client, "DELETE", f"{jobs}/job")
    eventually(lambda: _names(api_client, pods) == [])


def test_gc_foreground(api_client: ApiClient, namespace: str) -> None:
    jobs, pods = _job_with_pods(api_client, namespace, block=True)
    status, _ = call(
        api_client, "DELETE", f"{jobs}/job", query=[("propagationPolicy", "Foreground")]
    )
    assert status in (200, 202)
    eventually(lambda: _names(api_client, pods) == [])
    eventually(lambda: call(api_client, "GET", f"{jobs}/job")[0] == 404)


def test_gc_foreground_waits_for_blocking_dependent(api_client: ApiClient, namespace: str) -> None:
    jobs, pods = _job_with_pods(api_client, namespace, block=True)
    # w1 has a finalizer: the owner must wait for it
    _, w1 = call(api_client, "GET", f"{pods}/w1")
    w1["metadata"]["finalizers"] = ["example.com/hold"]
    call(api_client, "PUT", f"{pods}/w1", w1)
    call(api_client, "DELETE", f"{jobs}/job", {"propagationPolicy": "Foreground"})
    eventually(lambda: _names(api_client, pods) == ["w1"])
    _, job = call(api_client, "GET", f"{jobs}/job")
    assert "foregroundDeletion" in job["metadata"]["finalizers"]
    assert job["metadata"]["deletionTimestamp"]
    call(
        api_client,
        "PATCH",
        f"{pods}/w1",
        {"metadata": {"finalizers": None}},
        content_type="application/merge-patch+json",
    )
    eventually(lambda: call(api_client, "GET", f"{jobs}/job")[0] == 404)
    assert _names(api_client, pods) == []


def test_gc_orphan(api_client: ApiClient, namespace: str) -> None:
    jobs, pods = _job_with_pods(api_client, namespace)
    call(api_client, "DELETE", f"{jobs}/job", {"propagationPolicy": "Orphan"})
    eventually(lambda: call(api_client, "GET", f"{jobs}/job")[0] == 404)
    eventually(
        lambda: all(
            not call(api_client, "GET", f"{pods}/{n}")[1]["metadata"].get("ownerReferences")
            for n in ("w1", "w2")
        )
    )
    assert _names(api_client, pods) == ["w1", "w2"]


def test_gc_keeps_dependent_with_live_owner(api_client: ApiClient, namespace: str) -> None:
    cms = f"/api/v1/namespaces/{namespace}/configmaps"
    _, a = call(api_client, "POST", cms, {"metadata": {"name": "a"}})
    _, b = call(api_client, "POST", cms, {"metadata": {"name": "b"}})
    refs = [dict(_owner_ref(a), controller=False), dict(_owner_ref(b), controller=False)]
    call(api_client, "POST", cms, {"metadata": {"name": "dep", "ownerReferences": refs}})
    call(api_client, "DELETE", f"{cms}/a")
    eventually(
        lambda: (
            [
                r["name"]
                for r in call(api_client, "GET", f"{cms}/dep")[1]["metadata"].get(
                    "ownerReferences", []
                )
            ]
            == ["b"]
        )
    )
    call(api_client, "DELETE", f"{cms}/b")
    eventually(lambda: call(api_client, "GET", f"{cms}/dep")[0] == 404)


def test_namespace_deletion_removes_contents(api_client: ApiClient) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    ns = f"t-del-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": ns}})
    core.create_namespaced_pod(ns, pod("a"))
    core.create_namespaced_config_map(ns, {"metadata": {"name": "c"}})
    call(
        api_client,
        "POST",
        f"/apis/sedna.io/v1alpha1/namespaces/{ns}/models",
        {"metadata": {"name": "m"}, "spec": {"url": "u", "format": "f"}},
    )
    status, out = call(api_client, "DELETE", f"/api/v1/namespaces/{ns}")
    assert status == 200 and out["kind"] == "Namespace"
    eventually(lambda: api_error_code(lambda: core.read_namespace(ns)) == 404, timeout=30)
    assert core.list_pod_for_all_namespaces(field_selector=f"metadata.namespace={ns}").items == []


def test_create_in_terminating_namespace_forbidden(api_client: ApiClient, namespace: str) -> None:
    cms = f"/api/v1/namespaces/{namespace}/configmaps"
    call(api_client, "POST", cms, {"metadata": {"name": "hold", "finalizers": ["example.com/x"]}})
    call(api_client, "DELETE", f"/api/v1/namespaces/{namespace}")
    _, nso = call(api_client, "GET", f"/api/v1/namespaces/{namespace}")
    assert nso["status"]["phase"] == "Terminating"
    expect_status(api_client, 403, "POST", cms, {"metadata": {"name": "new"}})
    call(
        api_client,
        "PATCH",
        f"{cms}/hold",
        {"metadata": {"finalizers": None}},
        content_type="application/merge-patch+json",
    )
    eventually(
        lambda: call(api_client, "GET", f"/api/v1/namespaces/{namespace}")[0] == 404, timeout=30
    )


def test_delete_collection(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    for n, lab in (("a", "x"), ("b", "x"), ("c", "y")):
        core.create_namespaced_config_map(
            namespace, {"metadata": {"name": n, "labels": {"k": lab}}}
        )
    core.delete_collection_namespaced_config_map(namespace, label_selector="k=x")
    assert [c.metadata.name for c in core.list_namespaced_config_map(namespace).items] == ["c"]
