"""Metadata-only reads: ``PartialObjectMetadata`` through the official client, over HTTP.

The Accept headers are client-go's metadata client's (``as=PartialObjectMetadata`` for
get and watch, ``as=PartialObjectMetadataList`` for list); the official client sends
them through its generated API methods' ``_headers``.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import kubernetes
import pytest

from sedna.embedded.apiserver import APIServer

from .helpers import api_error, pod

ApiClient = kubernetes.client.ApiClient

META = "meta.k8s.io"
PROTO = "application/vnd.kubernetes.protobuf"
OBJ = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
OBJ_BETA = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1"
LIST_BETA = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1"
# what client-go's metadata client sends for a list: protobuf first, JSON fallbacks
CLIENT_GO_LIST = (
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
)


def read(fn: Callable[..., Any], *args: Any, accept: str, **kw: Any) -> tuple[str, Any]:
    """(Content-Type, parsed body) of a generated API call made with ``accept``."""
    resp = fn(*args, _headers={"Accept": accept}, _preload_content=False, **kw)
    try:
        return resp.headers.get("Content-Type", ""), json.loads(resp.data)
    finally:
        resp.release_conn()


def status_of(exc: kubernetes.client.ApiException) -> dict[str, Any]:
    body = json.loads(exc.body)
    assert body["kind"] == "Status" and body["code"] == exc.status, body
    return dict(body)


def assert_partial(obj: dict[str, Any], full: dict[str, Any], version: str = "v1") -> None:
    """``obj`` is ``full`` reduced to its metadata, as kube's asPartialObjectMetadata does."""
    assert obj == {
        "kind": "PartialObjectMetadata",
        "apiVersion": f"{META}/{version}",
        "metadata": full["metadata"],
    }


def full_pod(name: str, **meta: Any) -> dict[str, Any]:
    body = pod(name, **meta)
    body["spec"]["nodeName"] = "edge-1"
    return body


@pytest.fixture()
def core(api_client: ApiClient) -> kubernetes.client.CoreV1Api:
    return kubernetes.client.CoreV1Api(api_client)


@pytest.fixture()
def custom(api_client: ApiClient) -> kubernetes.client.CustomObjectsApi:
    return kubernetes.client.CustomObjectsApi(api_client)


@pytest.fixture()
def node_names(core: kubernetes.client.CoreV1Api) -> Iterator[Callable[[str], str]]:
    """Unique Node names; every Node created under one is deleted afterwards."""
    prefix = f"meta-{uuid.uuid4().hex[:8]}"
    made: list[str] = []

    def name(suffix: str) -> str:
        made.append(f"{prefix}-{suffix}")
        return made[-1]

    yield name
    for n in made:
        with contextlib.suppress(kubernetes.client.ApiException):
            core.delete_node(n)


def node_body(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": {"note": "kept"}},
        "status": {
            "images": [
                {"names": [f"registry/image-{i}:latest"], "sizeBytes": 10**8} for i in range(50)
            ],
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


# ---- get --------------------------------------------------------------------------------
def test_get_answers_the_whole_metadata_and_nothing_else(
    core: kubernetes.client.CoreV1Api, namespace: str
) -> None:
    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}
    core.create_namespaced_pod(
        namespace,
        full_pod(
            "p",
            labels={"app": "a"},
            annotations={"k": "v"},
            ownerReferences=[ref],
            finalizers=["example.com/keep"],
        ),
    )
    try:
        _, full = read(core.read_namespaced_pod, "p", namespace, accept="application/json")
        ctype, partial = read(core.read_namespaced_pod, "p", namespace, accept=OBJ)
        _, beta = read(core.read_namespaced_pod, "p", namespace, accept=OBJ_BETA)
    finally:
        core.patch_namespaced_pod("p", namespace, {"metadata": {"finalizers": None}})
    assert ctype.startswith("application/json")
    assert_partial(partial, full)
    meta = partial["metadata"]
    assert meta["labels"] == {"app": "a"} and meta["annotations"] == {"k": "v"}
    assert meta["ownerReferences"][0]["uid"] == owner.metadata.uid
    assert meta["finalizers"] == ["example.com/keep"]
    assert meta["uid"] and meta["resourceVersion"] and meta["creationTimestamp"]
    # v1beta1 is served as well, in its own apiVersion
    assert_partial(beta, full, "v1beta1")


def test_get_of_a_cluster_scoped_node(
    core: kubernetes.client.CoreV1Api, node_names: Callable[[str], str]
) -> None:
    name = node_names("big")
    core.create_node(node_body(name, zone="a"))
    _, full = read(core.read_node, name, accept="application/json")
    assert len(full["status"]["images"]) == 50
    _, partial = read(core.read_node, name, accept=OBJ)
    assert_partial(partial, full)
    assert "namespace" not in partial["metadata"]
    assert len(json.dumps(partial)) * 10 < len(json.dumps(full))


def test_get_of_a_custom_resource(
    custom: kubernetes.client.CustomObjectsApi, namespace: str
) -> None:
    body = {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "Model",
        "metadata": {"name": "m", "labels": {"tier": "edge"}},
        "spec": {"url": "s3://models/m.pb", "format": "pb"},
    }
    created = custom.create_namespaced_custom_object(
        "sedna.io", "v1alpha1", namespace, "models", body
    )
    got = custom.get_namespaced_custom_object(
        "sedna.io", "v1alpha1", namespace, "models", "m", _headers={"Accept": OBJ}
    )
    assert got == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": created["metadata"],
    }
    listed = custom.list_namespaced_custom_object(
        "sedna.io", "v1alpha1", namespace, "models", _headers={"Accept": LIST}
    )
    assert listed["kind"] == "PartialObjectMetadataList"
    assert [i["metadata"] for i in listed["items"]] == [created["metadata"]]
    assert all(set(i) == {"kind", "apiVersion", "metadata"} for i in listed["items"])


def test_missing_object_and_missing_resource_are_404(
    core: kubernetes.client.CoreV1Api,
    custom: kubernetes.client.CustomObjectsApi,
    namespace: str,
) -> None:
    exc = api_error(lambda: read(core.read_namespaced_pod, "absent", namespace, accept=OBJ))
    assert exc.status == 404 and status_of(exc)["reason"] == "NotFound"
    # a resource the server does not serve at all: 404 before any negotiation
    for accept in (OBJ, "application/json;as=Nonsense;g=meta.k8s.io;v=v1"):
        exc = api_error(
            lambda a=accept: custom.get_namespaced_custom_object(
                "example.com", "v1", namespace, "widgets", "w", _headers={"Accept": a}
            )
        )
        assert exc.status == 404 and status_of(exc)["reason"] == "NotFound"
    exc = api_error(
        lambda: custom.list_cluster_custom_object(
            "sedna.io", "v9", "models", _headers={"Accept": LIST}
        )
    )
    assert exc.status == 404


# ---- list -------------------------------------------------------------------------------
def test_list_pages_keep_the_list_metadata(
    core: kubernetes.client.CoreV1Api, namespace: str
) -> None:
    for i in range(5):
        core.create_namespaced_pod(namespace, full_pod(f"p{i}", labels={"i": str(i)}))
    _, full = read(core.list_namespaced_pod, namespace, accept="application/json")
    by_name = {o["metadata"]["name"]: o for o in full["items"]}

    pages = []
    token = None
    while True:
        kw: dict[str, Any] = {"limit": 2}
        if token:
            kw["_continue"] = token
        ctype, page = read(core.list_namespaced_pod, namespace, accept=LIST, **kw)
        assert ctype.startswith("application/json")
        assert page["kind"] == "PartialObjectMetadataList"
        assert page["apiVersion"] == "meta.k8s.io/v1"
        pages.append(page)
        token = page["metadata"].get("continue")
        if not token:
            break
    assert [len(p["items"]) for p in pages] == [2, 2, 1]
    # every page is served from the first page's snapshot, with kube's list metadata
    assert {p["metadata"]["resourceVersion"] for p in pages} == {
        pages[0]["metadata"]["resourceVersion"]
    }
    assert [p["metadata"].get("remainingItemCount") for p in pages] == [3, 1, None]
    items = [i for p in pages for i in p["items"]]
    assert sorted(i["metadata"]["name"] for i in items) == sorted(by_name)
    for item in items:
        assert_partial(item, by_name[item["metadata"]["name"]])


def test_list_with_selectors_and_v1beta1(core: kubernetes.client.CoreV1Api, namespace: str) -> None:
    for i in range(4):
        core.create_namespaced_pod(
            namespace, full_pod(f"p{i}", labels={"parity": "even" if i % 2 == 0 else "odd"})
        )
    _, odd = read(core.list_namespaced_pod, namespace, accept=LIST, label_selector="parity=odd")
    assert sorted(i["metadata"]["name"] for i in odd["items"]) == ["p1", "p3"]
    _, one = read(
        core.list_namespaced_pod, namespace, accept=LIST_BETA, field_selector="metadata.name=p2"
    )
    assert one["apiVersion"] == "meta.k8s.io/v1beta1"
    assert [i["metadata"]["name"] for i in one["items"]] == ["p2"]
    assert one["items"][0]["apiVersion"] == "meta.k8s.io/v1beta1"
    # a field selector on a field the metadata does not carry still works: the server
    # filters the full objects, then converts
    _, on_node = read(
        core.list_namespaced_pod, namespace, accept=LIST, field_selector="spec.nodeName=edge-1"
    )
    assert len(on_node["items"]) == 4
    _, empty = read(core.list_namespaced_pod, namespace, accept=LIST, label_selector="parity=none")
    assert empty["items"] == [] and empty["metadata"]["resourceVersion"]


def test_list_of_cluster_scoped_nodes(
    core: kubernetes.client.CoreV1Api, node_names: Callable[[str], str]
) -> None:
    zone = uuid.uuid4().hex[:8]
    names = sorted(node_names(str(i)) for i in range(3))
    for n in names:
        core.create_node(node_body(n, zone=zone))
    _, listed = read(core.list_node, accept=CLIENT_GO_LIST, label_selector=f"zone={zone}")
    assert listed["kind"] == "PartialObjectMetadataList"
    assert sorted(i["metadata"]["name"] for i in listed["items"]) == names
    assert all("status" not in i for i in listed["items"])


# ---- watch ------------------------------------------------------------------------------
def watch_events(
    fn: Callable[..., Any],
    *args: Any,
    accept: str,
    until: Callable[[dict[str, Any]], bool],
    **kw: Any,
) -> list[dict[str, Any]]:
    """Events (type, raw object) of the official client's Watch until ``until`` holds."""
    w = kubernetes.watch.Watch()
    out: list[dict[str, Any]] = []
    for ev in w.stream(fn, *args, _headers={"Accept": accept}, timeout_seconds=20, **kw):
        out.append({"type": ev["type"], "object": ev["raw_object"]})
        if until(out[-1]):
            w.stop()
    return out


def test_watch_from_a_resource_version_sends_metadata_only(
    core: kubernetes.client.CoreV1Api, namespace: str
) -> None:
    rv = core.list_namespaced_pod(namespace).metadata.resource_version
    core.create_namespaced_pod(namespace, full_pod("a"))
    core.patch_namespaced_pod("a", namespace, {"metadata": {"labels": {"changed": "yes"}}})
    core.create_namespaced_pod(namespace, full_pod("b"))
    core.delete_namespaced_pod("b", namespace)
    _, now_a = read(core.read_namespaced_pod, "a", namespace, accept="application/json")

    events = watch_events(
        core.list_namespaced_pod,
        namespace,
        accept=OBJ,
        resource_version=rv,
        until=lambda ev: ev["type"] == "DELETED",
    )
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "a"),
        ("MODIFIED", "a"),
        ("ADDED", "b"),
        ("DELETED", "b"),
    ]
    for e in events:
        assert set(e["object"]) == {"kind", "apiVersion", "metadata"}
        assert e["object"]["kind"] == "PartialObjectMetadata"
    assert_partial(events[1]["object"], now_a)
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs) and rvs[0] > int(rv)


def test_watch_of_nodes_with_a_selector_and_bookmarks(
    core: kubernetes.client.CoreV1Api,
    node_names: Callable[[str], str],
    embedded_apiserver: APIServer,
) -> None:
    zone = uuid.uuid4().hex[:8]
    interval = embedded_apiserver.bookmark_frequency
    embedded_apiserver.bookmark_frequency = 0.05
    try:
        kept, other = node_names("kept"), node_names("other")
        core.create_node(node_body(kept, zone=zone))
        core.create_node(node_body(other, zone="elsewhere"))
        events = watch_events(
            core.list_node,
            accept=OBJ,
            label_selector=f"zone={zone}",
            allow_watch_bookmarks=True,
            until=lambda ev: ev["type"] == "BOOKMARK",
        )
    finally:
        embedded_apiserver.bookmark_frequency = interval
    (added, bookmark) = events
    assert added["type"] == "ADDED" and added["object"]["metadata"]["name"] == kept
    assert added["object"]["kind"] == "PartialObjectMetadata"
    assert "status" not in added["object"]
    # kube converts bookmarks too: a PartialObjectMetadata holding the resourceVersion
    assert bookmark["object"] == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": bookmark["object"]["metadata"]["resourceVersion"]},
    }
    assert int(bookmark["object"]["metadata"]["resourceVersion"]) >= int(
        added["object"]["metadata"]["resourceVersion"]
    )


def test_watch_of_a_custom_resource_and_410_stays_a_status(
    custom: kubernetes.client.CustomObjectsApi,
    namespace: str,
    embedded_apiserver: APIServer,
) -> None:
    listed = custom.list_namespaced_custom_object("sedna.io", "v1alpha1", namespace, "datasets")
    rv = listed["metadata"]["resourceVersion"]
    body = {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "Dataset",
        "metadata": {"name": "d"},
        "spec": {"url": "/data/d.txt", "format": "txt", "nodeName": "edge-1"},
    }
    custom.create_namespaced_custom_object("sedna.io", "v1alpha1", namespace, "datasets", body)
    events = watch_events(
        custom.list_namespaced_custom_object,
        "sedna.io",
        "v1alpha1",
        namespace,
        "datasets",
        accept=OBJ,
        resource_version=rv,
        until=lambda ev: True,
    )
    assert [(e["type"], e["object"]["kind"]) for e in events] == [
        ("ADDED", "PartialObjectMetadata")
    ]
    assert events[0]["object"]["metadata"]["name"] == "d"

    embedded_apiserver.faults.gone_for_next_watches(1)
    try:
        resp = custom.list_namespaced_custom_object(
            "sedna.io",
            "v1alpha1",
            namespace,
            "datasets",
            watch=True,
            resource_version=rv,
            _headers={"Accept": OBJ},
            _preload_content=False,
        )
        try:
            lines = [json.loads(line) for line in resp if line.strip()]
        finally:
            resp.release_conn()
    finally:
        embedded_apiserver.faults.reset()
    # the ERROR event of a 410 carries its Status, as in any watch
    (error,) = lines
    assert error["type"] == "ERROR"
    assert error["object"]["kind"] == "Status" and error["object"]["code"] == 410


# ---- negotiation --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("accept", "kind", "version"),
    [
        # kubectl-style fallbacks: the first supported range wins
        (f"application/json;as=Nonsense;g={META};v=v1,{OBJ_BETA},application/json", "P", "v1beta1"),
        (f"application/json;as=PartialObjectMetadata;g={META};v=v2,{OBJ}", "P", "v1"),
        (f"application/json;as=PartialObjectMetadata;g=example.com;v=v1,{OBJ}", "P", "v1"),
        (f"{PROTO};as=PartialObjectMetadata;g={META};v=v1,{OBJ}", "P", "v1"),
        (f"{OBJ}, application/json", "P", "v1"),
        # plain JSON listed first, or preferred by q, wins over the conversion
        (f"application/json, {OBJ}", "Pod", "v1"),
        (f"{OBJ};q=0.5, application/json", "Pod", "v1"),
        (f"application/json;q=0.5, {OBJ}", "P", "v1"),
        (f"application/json;as=Nonsense;g={META};v=v1, application/json", "Pod", "v1"),
        ("*/*", "Pod", "v1"),
        # Table keeps working through the same negotiation
        (f"application/json;as=Table;g={META};v=v1,{OBJ}", "Table", "v1"),
    ],
)
def test_accept_fallbacks_pick_the_first_supported_range(
    core: kubernetes.client.CoreV1Api, namespace: str, accept: str, kind: str, version: str
) -> None:
    core.create_namespaced_pod(namespace, full_pod("p"))
    _, body = read(core.read_namespaced_pod, "p", namespace, accept=accept)
    expected = "PartialObjectMetadata" if kind == "P" else kind
    assert body["kind"] == expected
    if kind == "P":
        assert body["apiVersion"] == f"{META}/{version}"
        assert set(body) == {"kind", "apiVersion", "metadata"}


@pytest.mark.parametrize(
    "accept",
    [
        f"application/json;as=Nonsense;g={META};v=v1",
        f"application/json;as=PartialObjectMetadata;g={META};v=v2",
        "application/json;as=PartialObjectMetadata;g=example.com;v=v1",
        "application/json;as=PartialObjectMetadata",
        f"application/json;as=Nonsense;g={META};v=v1, application/json;as=Other;g={META};v=v1",
    ],
)
def test_an_unknown_conversion_is_406(
    core: kubernetes.client.CoreV1Api, namespace: str, accept: str
) -> None:
    core.create_namespaced_pod(namespace, full_pod("p"))
    for call in (
        lambda: read(core.read_namespaced_pod, "p", namespace, accept=accept),
        lambda: read(core.list_namespaced_pod, namespace, accept=accept),
        lambda: read(core.list_namespaced_pod, namespace, accept=accept, watch=True),
    ):
        exc = api_error(call)
        assert exc.status == 406
        status = status_of(exc)
        assert status["reason"] == "NotAcceptable"
        assert status["message"].startswith("only the following media types are accepted")


def test_the_single_and_list_forms_do_not_mix(
    core: kubernetes.client.CoreV1Api, node_names: Callable[[str], str]
) -> None:
    name = node_names("n")
    core.create_node(node_body(name))
    exc = api_error(lambda: read(core.list_node, accept=OBJ))
    assert exc.status == 406
    assert status_of(exc)["message"] == (
        "you requested PartialObjectMetadata, but the requested object is a list (*v1.NodeList)"
    )
    exc = api_error(lambda: read(core.read_node, name, accept=LIST))
    assert exc.status == 406
    assert "you requested PartialObjectMetadataList" in status_of(exc)["message"]


def test_a_watch_asking_for_the_list_form_is_406(
    core: kubernetes.client.CoreV1Api, namespace: str, embedded_apiserver: APIServer
) -> None:
    """kube would send full objects here (each conversion fails); this server says so."""
    exc = api_error(lambda: read(core.list_namespaced_pod, namespace, accept=LIST, watch=True))
    assert exc.status == 406
    assert status_of(exc)["message"] == (
        "you requested PartialObjectMetadataList, but the requested object is not a list (*v1.Pod)"
    )
