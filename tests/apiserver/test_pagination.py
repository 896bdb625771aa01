"""List pagination (``limit`` and ``continue``) through the official client and kubectl.

Everything but the expiry tests runs against a real cluster too: there, pages come
from etcd (or the watch cache), and the same assertions hold.
"""

from __future__ import annotations

import base64
import json
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from sedna.embedded.apiserver import APIServer

from .helpers import api_error, expect_status, pod
from .test_kubectl import KUBECTL_PARAMS, Kubectl, kubeconfig_for, make_runner
from .test_tables import get_raw

ApiClient = kubernetes.client.ApiClient
REAL_CLUSTER = bool(os.environ.get("SEDNA_TEST_KUBECONFIG"))
EXPIRED_MESSAGE = (
    "The provided continue parameter is too old to display a consistent list result. "
    "You can start a new list without the continue parameter, or use the continue token "
    "in this response to retrieve the remainder of the results."
)
MODELS = ("sedna.io", "v1alpha1", "models")


def _walk(
    list_page: Callable[..., Any], limit: int, token: str | None = None, **kw: Any
) -> list[Any]:
    """Every page of a typed list (from ``token`` on), following ``continue`` to the end."""
    pages = [list_page(limit=limit, _continue=token, **kw)]
    while pages[-1].metadata._continue:
        assert len(pages) < 1000, "continue never ends"
        pages.append(list_page(limit=limit, _continue=pages[-1].metadata._continue, **kw))
    return pages


def _walk_raw(list_page: Callable[..., Any], limit: int, **kw: Any) -> list[dict[str, Any]]:
    """Every page of a dict-returning list (custom objects)."""
    pages = [list_page(limit=limit, **kw)]
    while pages[-1]["metadata"].get("continue"):
        assert len(pages) < 1000, "continue never ends"
        pages.append(list_page(limit=limit, _continue=pages[-1]["metadata"]["continue"], **kw))
    return pages


def _names(pages: list[Any]) -> list[str]:
    return [o.metadata.name for p in pages for o in p.items]


def _make_pods(core: Any, namespace: str, n: int, **meta: Any) -> list[str]:
    names = [f"p{i:02d}" for i in range(n)]
    for name in names:
        core.create_namespaced_pod(namespace, pod(name, **meta))
    return names


def _model(name: str, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "Model",
        "metadata": {"name": name, **meta},
        "spec": {"url": "/model/frozen.pb", "format": "ckpt"},
    }


def _token(rv: Any, start: Any, version: str = "meta.k8s.io/v1") -> str:
    raw = json.dumps({"v": version, "rv": rv, "start": start}).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _status(exc: kubernetes.client.ApiException) -> dict[str, Any]:
    body = json.loads(exc.body)
    assert body["kind"] == "Status" and body["code"] == exc.status, body
    return dict(body)


# ---- pages of one snapshot -------------------------------------------------------------
def test_pages_concatenate_to_the_full_list(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    names = _make_pods(core, namespace, 7)
    full = core.list_namespaced_pod(namespace)
    assert full.metadata._continue is None
    for limit in (1, 2, 3, 7):
        pages = _walk(core.list_namespaced_pod, limit, namespace=namespace)
        assert len(pages) == -(-7 // limit)
        assert all(len(p.items) == limit for p in pages[:-1])
        assert _names(pages) == [p.metadata.name for p in full.items] == names
        assert pages[-1].metadata._continue is None


def test_every_page_has_the_first_pages_resource_version(
    api_client: ApiClient, namespace: str
) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    _make_pods(core, namespace, 5)
    first = core.list_namespaced_pod(namespace, limit=2)
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "bump"}})
    pages = [first]
    while pages[-1].metadata._continue:
        pages.append(
            core.list_namespaced_pod(namespace, limit=2, _continue=pages[-1].metadata._continue)
        )
    assert len(pages) == 3
    assert {p.metadata.resource_version for p in pages} == {first.metadata.resource_version}


def test_writes_between_pages_do_not_show(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    _make_pods(core, namespace, 6, labels={"v": "old"})
    first = core.list_namespaced_pod(namespace, limit=2)
    assert _names([first]) == ["p00", "p01"]
    core.delete_namespaced_pod("p03", namespace, grace_period_seconds=0)
    core.patch_namespaced_pod("p04", namespace, {"metadata": {"labels": {"v": "new"}}})
    core.create_namespaced_pod(namespace, pod("p02a"))
    core.create_namespaced_pod(namespace, pod("p99"))
    rest = _walk(core.list_namespaced_pod, 2, first.metadata._continue, namespace=namespace)
    assert _names(rest) == ["p02", "p03", "p04", "p05"]
    assert [o.metadata.labels["v"] for p in rest for o in p.items] == ["old"] * 4
    # a new list sees the writes
    now = _names([core.list_namespaced_pod(namespace)])
    assert "p99" in now and "p02a" in now and "p04" in now
    assert core.read_namespaced_pod("p04", namespace).metadata.labels["v"] == "new"


def test_remaining_item_count(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    _make_pods(core, namespace, 5)
    pages = _walk(core.list_namespaced_pod, 2, namespace=namespace)
    assert [p.metadata.remaining_item_count for p in pages] == [3, 1, None]
    assert core.list_namespaced_pod(namespace, limit=5).metadata.remaining_item_count is None


def test_limit_zero_or_negative_means_no_limit(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    names = _make_pods(core, namespace, 3)
    for limit in (0, -1):
        got = core.list_namespaced_pod(namespace, limit=limit)
        assert _names([got]) == names and got.metadata._continue is None


def test_continue_with_limit_zero_returns_the_rest(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    _make_pods(core, namespace, 4)
    first = core.list_namespaced_pod(namespace, limit=1)
    rest = core.list_namespaced_pod(namespace, _continue=first.metadata._continue)
    assert _names([rest]) == ["p01", "p02", "p03"] and rest.metadata._continue is None
    assert rest.metadata.resource_version == first.metadata.resource_version


# ---- bad parameters --------------------------------------------------------------------
@pytest.mark.parametrize(
    "token",
    [
        "!!not-base64!!",
        base64.urlsafe_b64encode(b"not json").decode().rstrip("="),
        _token(5, "p01\x00", version="meta.k8s.io/v0"),
        _token(0, "p01\x00"),
        _token(5, ""),
        _token(5, "../other/p01"),
    ],
    ids=["base64", "json", "version", "rv-zero", "empty-start", "path-traversal"],
)
def test_malformed_continue_is_400(api_client: ApiClient, namespace: str, token: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    exc = api_error(lambda: core.list_namespaced_pod(namespace, limit=2, _continue=token))
    body = _status(exc)
    assert exc.status == 400 and body["reason"] == "BadRequest"
    assert "continue" in body["message"]


@pytest.mark.parametrize("limit", ["abc", "1.5", "2x"])
def test_non_integer_limit_is_400(
    api_client: ApiClient, apiserver: Any, namespace: str, limit: str
) -> None:
    # the typed client refuses a non-integer itself: send the raw request through it
    path = f"/api/v1/namespaces/{namespace}/pods"
    body = expect_status(api_client, 400, "GET", path, query=[("limit", limit)])
    assert body["reason"] == "BadRequest"
    if isinstance(apiserver, APIServer):  # kube says only strconv's "invalid syntax"
        assert "limit" in body["message"] and limit in body["message"]


def test_continue_with_resource_version_is_400(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    _make_pods(core, namespace, 3)
    first = core.list_namespaced_pod(namespace, limit=1)
    token = first.metadata._continue
    exc = api_error(
        lambda: core.list_namespaced_pod(
            namespace, limit=1, _continue=token, resource_version=first.metadata.resource_version
        )
    )
    body = _status(exc)
    assert exc.status == 400 and body["reason"] == "BadRequest"
    assert "resource version" in body["message"] and "continue" in body["message"]
    # "0" (any version) is let through, as kube does
    nxt = core.list_namespaced_pod(namespace, limit=1, _continue=token, resource_version="0")
    assert _names([nxt]) == ["p01"]


# ---- selectors, scopes, kinds ----------------------------------------------------------
def test_label_selector_pages_are_full(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    for i in range(12):
        core.create_namespaced_pod(namespace, pod(f"p{i:02d}", labels={"odd": str(i % 2)}))
    want = [f"p{i:02d}" for i in range(1, 12, 2)]
    pages = _walk(core.list_namespaced_pod, 2, namespace=namespace, label_selector="odd=1")
    assert _names(pages) == want
    assert all(len(p.items) == 2 for p in pages[:-1])
    assert all(p.metadata.remaining_item_count is None for p in pages)
    assert {p.metadata.resource_version for p in pages} == {pages[0].metadata.resource_version}


def test_field_selector_with_limit(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    names = _make_pods(core, namespace, 5)
    pages = _walk(
        core.list_namespaced_pod, 2, namespace=namespace, field_selector="metadata.name!=p01"
    )
    assert _names(pages) == [n for n in names if n != "p01"]
    assert all(len(p.items) == 2 for p in pages[:-1])
    assert all(p.metadata.remaining_item_count is None for p in pages)


def test_all_namespaces_in_etcd_key_order(api_client: ApiClient, namespace: str) -> None:
    """``<ns>-b/...`` sorts before ``<ns>/...``: etcd compares bytes and '-' < '/'."""
    core = kubernetes.client.CoreV1Api(api_client)
    other = f"{namespace}-b"
    core.create_namespace({"metadata": {"name": other}})
    try:
        run = uuid.uuid4().hex[:8]
        for ns in (namespace, other):
            for name in ("a", "b"):
                core.create_namespaced_pod(ns, pod(name, labels={"run": run}))
        pages = _walk(core.list_pod_for_all_namespaces, 1, label_selector=f"run={run}")
        got = [(o.metadata.namespace, o.metadata.name) for p in pages for o in p.items]
        want = [(other, "a"), (other, "b"), (namespace, "a"), (namespace, "b")]
        assert got == want
        full = core.list_pod_for_all_namespaces(label_selector=f"run={run}")
        assert [(o.metadata.namespace, o.metadata.name) for o in full.items] == want
    finally:
        core.delete_namespace(other)


def test_cluster_scoped_kind(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    run = uuid.uuid4().hex[:8]
    mine = [f"{namespace}-{i}" for i in range(5)]
    for name in mine:
        core.create_namespace({"metadata": {"name": name, "labels": {"run": run}}})
    try:
        # a shared server holds every test's namespace: big pages keep this short
        pages = _walk(core.list_namespace, 20)
        names = _names(pages)
        assert names == sorted(names) and len(names) == len(set(names))
        assert set(mine) <= set(names)
        assert {p.metadata.resource_version for p in pages} == {pages[0].metadata.resource_version}
        first_remaining = len(names) - 20 if len(names) > 20 else None
        assert pages[0].metadata.remaining_item_count == first_remaining
        selected = _walk(core.list_namespace, 2, label_selector=f"run={run}")
        assert _names(selected) == mine
        assert [len(p.items) for p in selected] == [2, 2, 1]
    finally:
        for name in mine:
            core.delete_namespace(name)


def test_custom_resources(api_client: ApiClient, namespace: str) -> None:
    co = kubernetes.client.CustomObjectsApi(api_client)
    names = [f"m{i}" for i in range(5)]
    for name in names:
        co.create_namespaced_custom_object(*MODELS[:2], namespace, MODELS[2], _model(name))
    pages = _walk_raw(
        lambda **kw: co.list_namespaced_custom_object(*MODELS[:2], namespace, MODELS[2], **kw),
        2,
    )
    assert [o["metadata"]["name"] for p in pages for o in p["items"]] == names
    assert [p["metadata"].get("remainingItemCount") for p in pages] == [3, 1, None]
    assert {p["metadata"]["resourceVersion"] for p in pages} == {
        pages[0]["metadata"]["resourceVersion"]
    }
    assert all(o["kind"] == "Model" for p in pages for o in p["items"])


def test_custom_resources_across_namespaces(api_client: ApiClient, namespace: str) -> None:
    co = kubernetes.client.CustomObjectsApi(api_client)
    run = uuid.uuid4().hex[:8]
    for name in ("x", "y", "z"):
        body = _model(name, labels={"run": run})
        co.create_namespaced_custom_object(*MODELS[:2], namespace, MODELS[2], body)
    first = co.list_cluster_custom_object(*MODELS, limit=2, label_selector=f"run={run}")
    co.create_namespaced_custom_object(
        *MODELS[:2], namespace, MODELS[2], _model("zz", labels={"run": run})
    )
    rest = co.list_cluster_custom_object(
        *MODELS, limit=2, label_selector=f"run={run}", _continue=first["metadata"]["continue"]
    )
    got = [o["metadata"]["name"] for p in (first, rest) for o in p["items"]]
    assert got == ["x", "y", "z"] and not rest["metadata"].get("continue")


def test_table_keeps_continue(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    _make_pods(core, namespace, 3)
    path = f"/api/v1/namespaces/{namespace}/pods"
    _, _, table = get_raw(api_client, path, query=[("limit", 2)])
    assert table["kind"] == "Table" and [r["cells"][0] for r in table["rows"]] == ["p00", "p01"]
    assert table["metadata"]["continue"] and table["metadata"]["remainingItemCount"] == 1
    token = table["metadata"]["continue"]
    _, _, rest = get_raw(api_client, path, query=[("limit", 2), ("continue", token)])
    assert [r["cells"][0] for r in rest["rows"]] == ["p02"]
    assert not rest["metadata"].get("continue")
    assert rest["metadata"]["resourceVersion"] == table["metadata"]["resourceVersion"]


# ---- kubectl ---------------------------------------------------------------------------
@pytest.fixture(params=KUBECTL_PARAMS)
def kubectl(request: pytest.FixtureRequest, apiserver: Any, tmp_path: Path, namespace: str) -> Any:
    binary = request.param
    assert binary is not None
    return make_runner(binary, kubeconfig_for(apiserver, tmp_path), namespace, tmp_path)


def test_kubectl_chunked_get_lists_every_pod(
    kubectl: Kubectl, api_client: ApiClient, namespace: str
) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    names = _make_pods(core, namespace, 5)
    out = kubectl("get", "pods", "--chunk-size=2", "-v=6")
    lines = [ln.split()[0] for ln in out.splitlines() if ln.startswith("p0")]
    assert lines == names
    assert out.count("limit=2") >= 3 and "continue=" in out  # three chunks
    listed = kubectl("get", "pods", "--chunk-size=2", "-o", "name")
    assert listed.split() == [f"pod/{n}" for n in names]


# ---- expiry (server-internal: a real cluster's compaction cannot be forced) ------------
@pytest.fixture()
def small() -> Iterator[tuple[APIServer, ApiClient]]:
    """A private server that keeps only a few events of history."""
    if REAL_CLUSTER:
        pytest.skip("server-internal test: not applicable to a real cluster")
    srv = APIServer(history=5)
    srv.start()
    cfg = srv.client_configuration()
    client = ApiClient(cfg, header_name="Authorization", header_value=f"Bearer {srv.token}")
    try:
        yield srv, client
    finally:
        client.close()
        srv.stop()


def test_token_expires_when_history_is_gone(small: tuple[APIServer, ApiClient]) -> None:
    _, client = small
    core = kubernetes.client.CoreV1Api(client)
    for i in range(4):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"c{i}"}})
    first = core.list_namespaced_config_map("default", limit=2)
    token = first.metadata._continue
    # within the retained history the snapshot still serves
    core.create_namespaced_config_map("default", {"metadata": {"name": "c1a"}})
    nxt = core.list_namespaced_config_map("default", limit=1, _continue=token)
    assert _names([nxt]) == ["c2"]
    for i in range(6):  # overruns the 5 events of history
        core.create_namespaced_config_map("default", {"metadata": {"name": f"d{i}"}})
    exc = api_error(lambda: core.list_namespaced_config_map("default", limit=2, _continue=token))
    body = _status(exc)
    assert exc.status == 410 and body["reason"] == "Expired"
    assert body["message"].startswith(EXPIRED_MESSAGE)
    # the token in the Status goes on from the same key at the current version
    rest = _walk(
        core.list_namespaced_config_map, 10, body["metadata"]["continue"], namespace="default"
    )
    # inconsistent, as kube warns: c1a was created after the first page
    assert _names(rest) == ["c1a", "c2", "c3"] + [f"d{i}" for i in range(6)]
    assert int(rest[0].metadata.resource_version) > int(first.metadata.resource_version)


def test_token_expires_after_compaction(small: tuple[APIServer, ApiClient]) -> None:
    srv, client = small
    core = kubernetes.client.CoreV1Api(client)
    for i in range(3):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"c{i}"}})
    first = core.list_namespaced_config_map("default", limit=1)
    core.delete_namespaced_config_map("c2", "default")
    srv.faults.compact()
    exc = api_error(
        lambda: core.list_namespaced_config_map(
            "default", limit=1, _continue=first.metadata._continue
        )
    )
    assert exc.status == 410 and _status(exc)["reason"] == "Expired"


def test_token_from_another_server_life_expires(small: tuple[APIServer, ApiClient]) -> None:
    """A token ahead of the store (a restart without persistence) cannot be served."""
    _, client = small
    core = kubernetes.client.CoreV1Api(client)
    exc = api_error(
        lambda: core.list_namespaced_config_map("default", limit=1, _continue=_token(10**9, "c\0"))
    )
    assert exc.status == 410 and _status(exc)["reason"] == "Expired"
