"""Raw JSON client against the in-process API server, through the official client."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import kubernetes
import pytest

from sedna.embedded.apiserver import APIServer
from sedna.runtime.kube import (
    CONFIGMAPS,
    MODELS,
    NAMESPACES,
    PODS,
    AlreadyExists,
    ApiError,
    Conflict,
    Gone,
    KubeClient,
    NotFound,
    ReadTimeout,
    ServerError,
    TooManyRequests,
    TransportError,
    api_client_for_url,
    error_from_status,
    update_status_with_retry,
)


def pod(name: str | None = None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"labels": labels}
    if name:
        meta["name"] = name
    else:
        meta["generateName"] = "p-"
    return {"metadata": meta, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def model(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"url": "s3://bucket/m", "format": "pb"}}


@pytest.fixture()
def kube(api_client: kubernetes.client.ApiClient) -> KubeClient:
    return KubeClient(api_client)


@pytest.fixture()
def srv(embedded_apiserver: APIServer) -> Iterator[APIServer]:
    yield embedded_apiserver
    embedded_apiserver.faults.reset()


def test_pool_is_sized_for_threads(kube: KubeClient) -> None:
    assert kube.api_client.configuration.connection_pool_maxsize >= 32


def test_crud_roundtrip_in_raw_dicts(kube: KubeClient, namespace: str) -> None:
    pods = kube.resource(PODS)
    created = pods.create(namespace, pod(app="a"))
    assert isinstance(created, dict)
    name = created["metadata"]["name"]
    assert name.startswith("p-") and len(name) > 2  # generateName
    assert created["apiVersion"] == "v1" and created["kind"] == "Pod"

    got = pods.get(namespace, name)
    assert got["metadata"]["uid"] == created["metadata"]["uid"]

    pods.create(namespace, pod("other", app="b"))
    listed = pods.list(namespace, label_selector="app=a")
    assert [p["metadata"]["name"] for p in listed["items"]] == [name]
    assert listed["metadata"]["resourceVersion"]

    merged = pods.patch(namespace, name, {"metadata": {"labels": {"x": "1"}}})
    assert merged["metadata"]["labels"] == {"app": "a", "x": "1"}
    jsonp = pods.patch(
        namespace,
        name,
        [{"op": "add", "path": "/metadata/labels/y", "value": "2"}],
        patch_type="json",
    )
    assert jsonp["metadata"]["labels"]["y"] == "2"
    strategic = pods.patch(
        namespace, name, {"metadata": {"labels": {"z": "3"}}}, patch_type="strategic"
    )
    assert strategic["metadata"]["labels"]["z"] == "3"
    with pytest.raises(TypeError):
        pods.patch(namespace, name, {"not": "a list"}, patch_type="json")

    stale = dict(created)
    with pytest.raises(Conflict) as conflict:
        pods.replace(namespace, name, stale)
    assert not isinstance(conflict.value, AlreadyExists)
    assert conflict.value.status == 409

    pods.delete(namespace, name, propagation_policy="Background")
    with pytest.raises(NotFound):
        pods.get(namespace, name)


def test_cluster_scoped_resource_ignores_namespace(kube: KubeClient, namespace: str) -> None:
    ns = kube.resource(NAMESPACES).get("whatever", namespace)
    assert ns["metadata"]["name"] == namespace


def test_errors_map_to_classes(kube: KubeClient, namespace: str) -> None:
    pods = kube.resource(PODS)
    with pytest.raises(NotFound) as nf:
        pods.get(namespace, "missing")
    assert nf.value.status == 404
    assert nf.value.reason == "NotFound"
    assert "missing" in nf.value.message
    assert nf.value.body.get("kind") == "Status"

    pods.create(namespace, pod("dup"))
    with pytest.raises(AlreadyExists) as ae:
        pods.create(namespace, pod("dup"))
    assert isinstance(ae.value, Conflict)
    assert ae.value.reason == "AlreadyExists"

    # Strategic merge is not defined for custom resources: the server says 415.
    kube.resource(MODELS).create(namespace, model("m"))
    with pytest.raises(ApiError) as unsupported:
        kube.resource(MODELS).patch(namespace, "m", {"spec": {}}, patch_type="strategic")
    assert unsupported.value.status == 415


@pytest.mark.parametrize(
    ("code", "cls"),
    [(410, Gone), (500, ServerError), (503, ServerError), (429, TooManyRequests), (409, Conflict)],
)
def test_injected_http_errors_map(
    kube: KubeClient, srv: APIServer, namespace: str, code: int, cls: type[ApiError]
) -> None:
    srv.faults.fail(code, verbs=["list"], resources=["configmaps"], count=1)
    with pytest.raises(cls) as err:
        kube.resource(CONFIGMAPS).list(namespace)
    assert err.value.status == code
    assert kube.resource(CONFIGMAPS).list(namespace)["items"] == []


def test_error_from_status_prefers_the_body_code() -> None:
    body = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
    err = error_from_status(200, body)
    assert isinstance(err, Gone)
    assert (err.status, err.reason, err.message) == (410, "Expired", "too old")
    assert type(error_from_status(418, None, "Teapot")) is ApiError


def test_transport_error_when_nothing_listens() -> None:
    client = KubeClient(api_client_for_url("http://127.0.0.1:9"), request_timeout=(1.0, 1.0))
    client.api_client.configuration.retries = 0
    with pytest.raises(TransportError) as err:
        client.resource(PODS).list("x")
    assert err.value.status == 0


def test_watch_streams_events_in_order_and_closes_from_another_thread(
    kube: KubeClient, namespace: str
) -> None:
    cms = kube.resource(CONFIGMAPS)
    rv = cms.list(namespace)["metadata"]["resourceVersion"]
    stream = cms.watch(namespace, resource_version=rv, timeout_seconds=30, read_timeout=10)
    seen: list[tuple[str, str]] = []
    got_three = threading.Event()

    def reader() -> None:
        for ev in stream:
            if ev["type"] != "BOOKMARK":
                seen.append((ev["type"], ev["object"]["metadata"]["name"]))
                if len(seen) == 3:
                    got_three.set()

    t = threading.Thread(target=reader)
    t.start()
    cms.create(namespace, {"metadata": {"name": "c1"}, "data": {"a": "1"}})
    cms.patch(namespace, "c1", {"data": {"a": "2"}})
    cms.delete(namespace, "c1")
    assert got_three.wait(5)
    stream.close()
    t.join(5)
    assert not t.is_alive()
    assert seen == [("ADDED", "c1"), ("MODIFIED", "c1"), ("DELETED", "c1")]
    stream.close()  # idempotent


def test_watch_read_timeout_on_a_silent_stream(kube: KubeClient, namespace: str) -> None:
    cms = kube.resource(CONFIGMAPS)
    rv = cms.list(namespace)["metadata"]["resourceVersion"]
    stream = cms.watch(
        namespace, resource_version=rv, timeout_seconds=30, allow_bookmarks=False, read_timeout=0.3
    )
    with pytest.raises(ReadTimeout):
        for _ in stream:
            pass
    assert stream.closed


def test_watch_gone_arrives_as_error_event(
    kube: KubeClient, srv: APIServer, namespace: str
) -> None:
    cms = kube.resource(CONFIGMAPS)
    rv = cms.list(namespace)["metadata"]["resourceVersion"]
    srv.faults.gone_for_next_watches(1)
    with cms.watch(namespace, resource_version=rv, timeout_seconds=5, read_timeout=5) as stream:
        first = next(iter(stream))
    assert first["type"] == "ERROR"
    assert isinstance(error_from_status(500, first["object"]), Gone)


def test_unconsumed_watch_can_be_closed(kube: KubeClient, namespace: str) -> None:
    stream = kube.resource(CONFIGMAPS).watch(namespace, timeout_seconds=5)
    stream.close()
    assert list(stream) == []


def test_status_update_survives_conflicts(kube: KubeClient, srv: APIServer, namespace: str) -> None:
    models = kube.resource(MODELS)
    models.create(namespace, model("m"))
    rule = srv.faults.fail(409, verbs=["update"], resources=["models/status"], count=2)
    calls = 0

    def mutate(obj: dict[str, Any]) -> bool:
        nonlocal calls
        calls += 1
        obj["status"] = {"metrics": [{"key": "acc", "value": str(calls)}]}
        return True

    out = update_status_with_retry(models, namespace, "m", mutate)
    assert calls == 3
    assert out["status"]["metrics"][0]["value"] == "3"
    assert rule.remaining == 0
    assert models.get(namespace, "m")["status"]["metrics"][0]["value"] == "3"


def test_status_update_gives_up_after_the_bound(
    kube: KubeClient, srv: APIServer, namespace: str
) -> None:
    models = kube.resource(MODELS)
    models.create(namespace, model("m"))
    srv.faults.fail(409, verbs=["update"], resources=["models/status"])

    def mutate(obj: dict[str, Any]) -> bool:
        obj["status"] = {"metrics": []}
        return True

    with pytest.raises(Conflict):
        update_status_with_retry(models, namespace, "m", mutate, attempts=3)


def test_status_update_skips_the_write_when_nothing_changes(
    kube: KubeClient, srv: APIServer, namespace: str
) -> None:
    models = kube.resource(MODELS)
    models.create(namespace, model("m"))
    counter = srv.faults.fail(500, every=10**9, verbs=["update"])  # counts, never fails
    out = update_status_with_retry(models, namespace, "m", lambda obj: False)
    assert out["metadata"]["name"] == "m"
    assert counter.seen == 0


def test_concurrent_requests_share_the_pool(kube: KubeClient, namespace: str) -> None:
    cms = kube.resource(CONFIGMAPS)
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            for j in range(5):
                cms.create(namespace, {"metadata": {"name": f"c{i}-{j}"}})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not errors, errors
    assert len(cms.list(namespace)["items"]) == 40
    assert time.monotonic() - started < 30
