"""PUT semantics: optimistic concurrency, generation, status subresource separation."""

from __future__ import annotations

import copy
from typing import Any

import kubernetes

from .helpers import call, expect_status, pod

ApiClient = kubernetes.client.ApiClient


def _il(name: str = "job") -> dict[str, Any]:
    return {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "IncrementalLearningJob",
        "metadata": {"name": name},
        "spec": {"dataset": {"name": "ds", "trainProb": 0.8}},
    }


def test_stale_resource_version_conflicts(api_client: ApiClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    _, cm = call(api_client, "POST", path, {"metadata": {"name": "c"}, "data": {"a": "1"}})
    stale = copy.deepcopy(cm)
    cm["data"] = {"a": "2"}
    status, _ = call(api_client, "PUT", f"{path}/c", cm)
    assert status == 200
    stale["data"] = {"a": "3"}
    st = expect_status(api_client, 409, "PUT", f"{path}/c", stale)
    assert st["reason"] == "Conflict" and st["details"]["name"] == "c"
    assert "the object has been modified" in st["message"]


def test_update_without_rv_is_unconditional(api_client: ApiClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    call(api_client, "POST", path, {"metadata": {"name": "c"}, "data": {"a": "1"}})
    status, cm = call(
        api_client, "PUT", f"{path}/c", {"metadata": {"name": "c"}, "data": {"a": "9"}}
    )
    assert status == 200 and cm["data"] == {"a": "9"}


def test_update_missing_is_404(api_client: ApiClient, namespace: str) -> None:
    expect_status(
        api_client,
        404,
        "PUT",
        f"/api/v1/namespaces/{namespace}/configmaps/x",
        {"metadata": {"name": "x"}},
    )


def test_name_mismatch_is_400(api_client: ApiClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    call(api_client, "POST", path, {"metadata": {"name": "c"}})
    expect_status(api_client, 400, "PUT", f"{path}/c", {"metadata": {"name": "other"}})


def test_generation_bumps_only_on_spec_change(api_client: ApiClient, namespace: str) -> None:
    path = f"/apis/sedna.io/v1alpha1/namespaces/{namespace}/incrementallearningjobs"
    _, job = call(api_client, "POST", path, _il())
    assert job["metadata"]["generation"] == 1
    job["metadata"]["labels"] = {"a": "b"}
    _, job = call(api_client, "PUT", f"{path}/job", job)
    assert job["metadata"]["generation"] == 1
    job["spec"]["dataset"]["trainProb"] = 0.5
    _, job = call(api_client, "PUT", f"{path}/job", job)
    assert job["metadata"]["generation"] == 2


def test_immutable_metadata_kept(api_client: ApiClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    _, cm = call(api_client, "POST", path, {"metadata": {"name": "c"}})
    uid, ts = cm["metadata"]["uid"], cm["metadata"]["creationTimestamp"]
    cm["metadata"]["uid"] = "forged"
    cm["metadata"]["creationTimestamp"] = "2000-01-01T00:00:00Z"
    cm["data"] = {"x": "y"}
    _, upd = call(api_client, "PUT", f"{path}/c", cm)
    assert upd["metadata"]["uid"] == uid and upd["metadata"]["creationTimestamp"] == ts


def test_noop_update_keeps_resource_version(api_client: ApiClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    _, cm = call(api_client, "POST", path, {"metadata": {"name": "c"}, "data": {"a": "1"}})
    _, upd = call(api_client, "PUT", f"{path}/c", cm)
    assert upd["metadata"]["resourceVersion"] == cm["metadata"]["resourceVersion"]


def test_main_resource_put_ignores_status(api_client: ApiClient, namespace: str) -> None:
    path = f"/apis/sedna.io/v1alpha1/namespaces/{namespace}/incrementallearningjobs"
    body = _il()
    body["status"] = {"stage": "Train"}
    _, job = call(api_client, "POST", path, body)
    assert "status" not in job  # create ignores status when there is a status subresource
    job["status"] = {"stage": "Eval"}
    job["spec"]["dataset"]["trainProb"] = 0.1
    _, job = call(api_client, "PUT", f"{path}/job", job)
    assert "status" not in job and job["spec"]["dataset"]["trainProb"] == 0.1


def test_status_put_ignores_everything_but_status(api_client: ApiClient, namespace: str) -> None:
    path = f"/apis/sedna.io/v1alpha1/namespaces/{namespace}/incrementallearningjobs"
    _, job = call(api_client, "POST", path, _il())
    job["status"] = {"stage": "Train", "conditions": [{"type": "Running", "status": "True"}]}
    job["spec"]["dataset"]["trainProb"] = 0.2
    job["metadata"]["labels"] = {"ignored": "yes"}
    status, upd = call(api_client, "PUT", f"{path}/job/status", job)
    assert status == 200
    assert upd["status"]["stage"] == "Train"
    assert upd["spec"]["dataset"]["trainProb"] == 0.8
    assert "labels" not in upd["metadata"]
    assert upd["metadata"]["generation"] == 1
    _, got = call(api_client, "GET", f"{path}/job/status")
    assert got["status"]["stage"] == "Train"


def test_status_put_conflict(api_client: ApiClient, namespace: str) -> None:
    path = f"/apis/sedna.io/v1alpha1/namespaces/{namespace}/incrementallearningjobs"
    _, job = call(api_client, "POST", path, _il())
    stale = copy.deepcopy(job)
    job["metadata"]["labels"] = {"a": "b"}
    call(api_client, "PUT", f"{path}/job", job)
    stale["status"] = {"stage": "Train"}
    expect_status(api_client, 409, "PUT", f"{path}/job/status", stale)


def test_custom_objects_api_status(api_client: ApiClient, namespace: str) -> None:
    co = kubernetes.client.CustomObjectsApi(api_client)
    args = ("sedna.io", "v1alpha1", namespace, "incrementallearningjobs")
    co.create_namespaced_custom_object(*args, _il())
    job = co.get_namespaced_custom_object(*args, "job")
    job["status"] = {"stage": "Deploy"}
    co.replace_namespaced_custom_object_status(*args, "job", job)
    assert co.get_namespaced_custom_object(*args, "job")["status"]["stage"] == "Deploy"


def test_pod_status_subresource(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    core.create_namespaced_pod(namespace, pod("a"))
    p = core.read_namespaced_pod("a", namespace)
    p.status.phase = "Running"
    core.replace_namespaced_pod(namespace=namespace, name="a", body=p)
    assert core.read_namespaced_pod("a", namespace).status.phase == "Pending"
    p = core.read_namespaced_pod("a", namespace)
    p.status.phase = "Running"
    core.replace_namespaced_pod_status("a", namespace, p)
    assert core.read_namespaced_pod("a", namespace).status.phase == "Running"


def test_configmap_has_no_status_subresource(api_client: ApiClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    call(api_client, "POST", path, {"metadata": {"name": "c"}})
    expect_status(api_client, 404, "GET", f"{path}/c/status")
