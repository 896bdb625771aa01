"""`dryRun=All` on every write verb: checked and answered as a real write, nothing
stored, nothing deleted, no watch event, no new resourceVersion."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes
import pytest

from .helpers import api_error, call, expect_status, pod, watch_events
from .test_kubectl import Kubectl
from .test_kubectl import kubectl as kubectl  # the fixture: one run per kubectl found

ApiClient = kubernetes.client.ApiClient
DRY = [("dryRun", "All")]
GROUP, VERSION = "sedna.io", "v1alpha1"


def _model(name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Model",
        "metadata": {"name": name},
        "spec": {"url": "s3://bucket/model", "format": "pb"},
    }


def _rv(api_client: ApiClient, namespace: str) -> str:
    """The server's current resourceVersion (a list's)."""
    _, listed = call(api_client, "GET", f"/api/v1/namespaces/{namespace}/configmaps")
    return str(listed["metadata"]["resourceVersion"])


def _quiet_since(api_client: ApiClient, namespace: str, rv: str, plural: str = "pods") -> None:
    """No event of the namespace's `plural` after `rv`, and the global version unmoved."""
    assert _rv(api_client, namespace) == rv
    evs = watch_events(
        api_client,
        f"/api/v1/namespaces/{namespace}/{plural}",
        query=[("resourceVersion", rv), ("timeoutSeconds", 1)],
    )
    assert evs == []


def test_dry_run_create_answers_the_object_and_stores_nothing(
    api_client: ApiClient, namespace: str
) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    rv = _rv(api_client, namespace)
    body = pod("")
    body["metadata"] = {"generateName": "web-"}
    status, out = call(api_client, "POST", f"/api/v1/namespaces/{namespace}/pods", body, query=DRY)
    assert status == 201
    meta = out["metadata"]
    assert meta["name"].startswith("web-") and len(meta["name"]) == 9
    assert meta["uid"] and meta["creationTimestamp"] and meta["namespace"] == namespace
    assert "resourceVersion" not in meta
    assert out["spec"]["restartPolicy"] == "Always"  # defaulted as stored
    assert core.list_namespaced_pod(namespace).items == []
    _quiet_since(api_client, namespace, rv)
    # admitted fully: what a real create refuses, a dry run refuses the same way
    core.create_namespaced_pod(namespace, pod("taken"))
    exc = api_error(lambda: core.create_namespaced_pod(namespace, pod("taken"), dry_run="All"))
    assert exc.status == 409
    exc = api_error(lambda: core.create_namespaced_pod(namespace, pod("Bad_Name"), dry_run="All"))
    assert exc.status == 422
    exc = api_error(lambda: core.create_namespaced_pod("no-such-ns", pod("x"), dry_run="All"))
    assert exc.status == 404


def test_dry_run_update_and_patch_change_nothing(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    cm = core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "c"}, "data": {"k": "1"}}
    )
    rv = cm.metadata.resource_version
    body = {"metadata": {"name": "c", "resourceVersion": rv}, "data": {"k": "2"}}
    out = core.replace_namespaced_config_map("c", namespace, body, dry_run="All")
    assert out.data == {"k": "2"} and out.metadata.resource_version == rv
    out = core.patch_namespaced_config_map("c", namespace, {"data": {"k": "3"}}, dry_run="All")
    assert out.data == {"k": "3"} and out.metadata.resource_version == rv
    stored = core.read_namespaced_config_map("c", namespace)
    assert stored.data == {"k": "1"} and stored.metadata.resource_version == rv
    _quiet_since(api_client, namespace, rv, "configmaps")
    # and checked as a real update: a stale resourceVersion conflicts
    stale = {"metadata": {"name": "c", "resourceVersion": "1"}, "data": {"k": "4"}}
    exc = api_error(
        lambda: core.replace_namespaced_config_map("c", namespace, stale, dry_run="All")
    )
    assert exc.status == 409
    exc = api_error(lambda: core.patch_namespaced_config_map("gone", namespace, {}, dry_run="All"))
    assert exc.status == 404


def test_dry_run_status_subresource(api_client: ApiClient, namespace: str) -> None:
    custom = kubernetes.client.CustomObjectsApi(api_client)
    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, "models", _model("m1"))
    before = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, "models", "m1")
    patched = custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, "models", "m1", {"status": {"metrics": []}}, dry_run="All"
    )
    assert patched["status"] == {"metrics": []}
    after = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, "models", "m1")
    assert after == before


def test_dry_run_delete_deletes_nothing(api_client: ApiClient, namespace: str) -> None:
    custom = kubernetes.client.CustomObjectsApi(api_client)
    core = kubernetes.client.CoreV1Api(api_client)
    owner = custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, "models", _model("m1")
    )
    dep = pod("dependent")
    dep["metadata"]["ownerReferences"] = [
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Model",
            "name": "m1",
            "uid": owner["metadata"]["uid"],
        }
    ]
    core.create_namespaced_pod(namespace, dep)
    rv = _rv(api_client, namespace)
    path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/models/m1"
    for policy in ("Background", "Foreground", "Orphan"):
        code, out = call(api_client, "DELETE", path, query=[*DRY, ("propagationPolicy", policy)])
        if policy == "Foreground":  # the object as a foreground delete marks it
            assert code == 202
            assert out["metadata"]["deletionTimestamp"]
            assert out["metadata"]["finalizers"] == ["foregroundDeletion"]
        else:
            assert code == 200
            assert out["status"] == "Success" and out["details"]["name"] == "m1"
    stored = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, "models", "m1")
    assert "deletionTimestamp" not in stored["metadata"]
    assert "finalizers" not in stored["metadata"]
    kept = core.read_namespaced_pod("dependent", namespace)
    assert kept.metadata.owner_references  # not orphaned
    _quiet_since(api_client, namespace, rv)
    exc = api_error(
        lambda: custom.delete_namespaced_custom_object(
            GROUP, VERSION, namespace, "models", "absent", dry_run="All"
        )
    )
    assert exc.status == 404


def test_dry_run_delete_of_a_pod_and_a_namespace(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    core.create_namespaced_pod(namespace, pod("p"))
    # a DeleteOptions body carries it as kubectl sends it
    status, out = call(
        api_client,
        "DELETE",
        f"/api/v1/namespaces/{namespace}/pods/p",
        {"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]},
    )
    assert status == 200 and out["kind"] == "Pod" and out["metadata"]["name"] == "p"
    assert core.read_namespaced_pod("p", namespace).metadata.deletion_timestamp is None
    code, ns = call(api_client, "DELETE", f"/api/v1/namespaces/{namespace}", query=DRY)
    assert code == 200 and ns["status"]["phase"] == "Terminating"
    assert core.read_namespace(namespace).status.phase != "Terminating"
    assert core.read_namespaced_pod("p", namespace).metadata.name == "p"


def test_dry_run_deletecollection(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    for n in ("a", "b"):
        core.create_namespaced_config_map(namespace, {"metadata": {"name": n}})
    rv = _rv(api_client, namespace)
    status, out = call(
        api_client, "DELETE", f"/api/v1/namespaces/{namespace}/configmaps", query=DRY
    )
    assert status == 200 and out["kind"] == "ConfigMapList"
    assert len(core.list_namespaced_config_map(namespace).items) == 2
    _quiet_since(api_client, namespace, rv, "configmaps")


def test_dry_run_crd_create_serves_nothing(api_client: ApiClient) -> None:
    ext = kubernetes.client.ApiextensionsV1Api(api_client)
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "dryruns.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "dryruns", "singular": "dryrun", "kind": "DryRun"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
            ],
        },
    }
    out = ext.create_custom_resource_definition(crd, dry_run="All")
    assert out.metadata.name == "dryruns.example.com"
    exc = api_error(lambda: ext.read_custom_resource_definition("dryruns.example.com"))
    assert exc.status == 404
    expect_status(api_client, 404, "GET", "/apis/example.com/v1/namespaces/default/dryruns")


BAD_VALUES = [["all"], ["All", "None"], [""], ["true"]]


@pytest.mark.parametrize("values", BAD_VALUES, ids=lambda v: ",".join(v) or "empty")
def test_unsupported_dry_run_values_are_refused(
    api_client: ApiClient, namespace: str, values: list[str]
) -> None:
    """kube-apiserver's answer: 422 naming dryRun on the verb's options kind."""
    core = kubernetes.client.CoreV1Api(api_client)
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "c"}})
    rv = _rv(api_client, namespace)
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    query = [("dryRun", v) for v in values]
    requests: list[tuple[str, str, str, Any, str]] = [
        ("CreateOptions", "POST", base, {"metadata": {"name": "n"}}, "application/json"),
        ("UpdateOptions", "PUT", f"{base}/c", {"metadata": {"name": "c"}}, "application/json"),
        (
            "PatchOptions",
            "PATCH",
            f"{base}/c",
            {"data": {"x": "y"}},
            "application/merge-patch+json",
        ),
        ("DeleteOptions", "DELETE", f"{base}/c", None, "application/json"),
        ("DeleteOptions", "DELETE", base, None, "application/json"),
    ]
    for kind, method, path, body, ctype in requests:
        err = expect_status(api_client, 422, method, path, body, query=query, content_type=ctype)
        assert err["reason"] == "Invalid"
        assert err["details"]["kind"] == kind and err["details"]["group"] == "meta.k8s.io"
        assert err["message"].startswith(f'{kind}.meta.k8s.io "" is invalid: dryRun: ')
        assert err["details"]["causes"][0]["field"] == "dryRun"
    assert [c.metadata.name for c in core.list_namespaced_config_map(namespace).items] == ["c"]
    assert _rv(api_client, namespace) == rv


@pytest.mark.parametrize(
    ("value", "code"), [("All", 400), ([1], 400), ({"a": 1}, 400), (["Al"], 422), ([""], 422)]
)
def test_hostile_dry_run_in_delete_options(
    api_client: ApiClient, namespace: str, value: Any, code: int
) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "c"}})
    status, out = call(
        api_client, "DELETE", f"/api/v1/namespaces/{namespace}/configmaps/c", {"dryRun": value}
    )
    assert status == code, out
    assert core.read_namespaced_config_map("c", namespace).metadata.name == "c"


MODEL = """\
apiVersion: sedna.io/v1alpha1
kind: Model
metadata:
  name: m1
spec:
  url: s3://bucket/model
  format: FORMAT
"""


def test_kubectl_server_dry_run(kubectl: Kubectl, tmp_path: Path) -> None:
    f = tmp_path / "model.yaml"
    f.write_text(MODEL.replace("FORMAT", "pb"))
    assert "created (server dry run)" in kubectl("create", "--dry-run=server", "-f", str(f))
    assert "NotFound" in kubectl("get", "models", "m1", check=False)
    assert "created (server dry run)" in kubectl("apply", "--dry-run=server", "-f", str(f))
    assert "NotFound" in kubectl("get", "models", "m1", check=False)
    assert "created" in kubectl("apply", "-f", str(f))
    f.write_text(MODEL.replace("FORMAT", "onnx"))
    assert "configured (server dry run)" in kubectl("apply", "--dry-run=server", "-f", str(f))
    assert kubectl("get", "models", "m1", "-o", "jsonpath={.spec.format}").strip() == "pb"
    assert "deleted (server dry run)" in kubectl("delete", "--dry-run=server", "models", "m1")
    assert kubectl("get", "models", "m1", "-o", "jsonpath={.metadata.name}").strip() == "m1"
    # a dry-run create of what exists is refused as the real one would be
    assert "AlreadyExists" in kubectl("create", "--dry-run=server", "-f", str(f), check=False)
