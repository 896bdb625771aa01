"""Server-internal behaviour: persistence across restarts, history compaction (410)
and fault injection. Skipped against a real cluster."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import kubernetes
import pytest
from support.outside import CRDS_DIR

from sedna.embedded.apiserver import APIServer

from .helpers import call, pod, watch_events

ApiClient = kubernetes.client.ApiClient
pytestmark = pytest.mark.skipif(
    bool(os.environ.get("SEDNA_TEST_KUBECONFIG")),
    reason="server-internal test: not applicable to a real cluster",
)


def _client(srv: APIServer) -> ApiClient:
    cfg = srv.client_configuration()
    return kubernetes.client.ApiClient(
        cfg, header_name="Authorization", header_value=f"Bearer {srv.token}"
    )


@pytest.fixture()
def small() -> Iterator[tuple[APIServer, ApiClient]]:
    srv = APIServer(history=5)
    srv.start()
    client = _client(srv)
    try:
        yield srv, client
    finally:
        client.close()
        srv.stop()


def test_watch_from_compacted_rv_gets_410(small: tuple[APIServer, ApiClient]) -> None:
    _, client = small
    path = "/api/v1/namespaces/default/configmaps"
    _, first = call(client, "POST", path, {"metadata": {"name": "c0"}})
    for i in range(1, 10):
        call(client, "POST", path, {"metadata": {"name": f"c{i}"}})
    evs = watch_events(
        client,
        path,
        query=[("resourceVersion", first["metadata"]["resourceVersion"]), ("timeoutSeconds", 1)],
    )
    assert len(evs) == 1 and evs[0]["type"] == "ERROR"
    st = evs[0]["object"]
    assert st["kind"] == "Status" and st["code"] == 410 and st["reason"] == "Expired"


def test_official_watch_raises_on_410(small: tuple[APIServer, ApiClient]) -> None:
    _srv, client = small
    core = kubernetes.client.CoreV1Api(client)
    for i in range(8):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"c{i}"}})
    w = kubernetes.watch.Watch()
    with pytest.raises(kubernetes.client.ApiException) as err:
        for _ in w.stream(
            core.list_namespaced_config_map, "default", resource_version="2", timeout_seconds=1
        ):
            pass
    assert err.value.status == 410


def test_recent_rv_still_resumes(small: tuple[APIServer, ApiClient]) -> None:
    _, client = small
    path = "/api/v1/namespaces/default/configmaps"
    for i in range(10):
        _, last = call(client, "POST", path, {"metadata": {"name": f"c{i}"}})
    call(client, "POST", path, {"metadata": {"name": "new"}})
    evs = watch_events(
        client,
        path,
        query=[("resourceVersion", last["metadata"]["resourceVersion"]), ("timeoutSeconds", 1)],
    )
    assert [e["object"]["metadata"]["name"] for e in evs] == ["new"]


def test_persistence_across_restart(tmp_path: Path) -> None:
    db = tmp_path / "api.db"
    srv = APIServer(db_path=db)
    srv.start()
    srv.install_crds_from_dir(CRDS_DIR)
    client = _client(srv)
    call(client, "POST", "/api/v1/namespaces", {"metadata": {"name": "keep"}})
    call(client, "POST", "/api/v1/namespaces/keep/pods", pod("a"))
    _, m = call(
        client,
        "POST",
        "/apis/sedna.io/v1alpha1/namespaces/keep/models",
        {"metadata": {"name": "m"}, "spec": {"url": "u", "format": "f"}},
    )
    call(client, "POST", "/api/v1/namespaces/keep/configmaps", {"metadata": {"name": "gone"}})
    call(client, "DELETE", "/api/v1/namespaces/keep/configmaps/gone")
    _, lst = call(client, "GET", "/api/v1/pods")
    last_rv = int(lst["metadata"]["resourceVersion"])
    client.close()
    srv.stop()

    srv2 = APIServer(db_path=db)
    srv2.start()
    client = _client(srv2)
    try:
        status, got = call(client, "GET", "/apis/sedna.io/v1alpha1/namespaces/keep/models/m")
        assert status == 200 and got["metadata"]["uid"] == m["metadata"]["uid"]
        assert call(client, "GET", "/api/v1/namespaces/keep/pods/a")[0] == 200
        assert call(client, "GET", "/api/v1/namespaces/keep/configmaps/gone")[0] == 404
        _, new = call(client, "POST", "/api/v1/namespaces/keep/pods", pod("b"))
        assert int(new["metadata"]["resourceVersion"]) > last_rv
        _, doc = call(client, "GET", "/apis/sedna.io/v1alpha1")
        assert "incrementallearningjobs" in [r["name"] for r in doc["resources"]]
        # history did not survive: resuming from before the restart is 410
        evs = watch_events(
            client,
            "/api/v1/namespaces/keep/pods",
            query=[("resourceVersion", "2"), ("timeoutSeconds", 1)],
        )
        assert evs[0]["type"] == "ERROR" and evs[0]["object"]["code"] == 410
    finally:
        client.close()
        srv2.stop()


@pytest.mark.parametrize("code", [500, 429, 409])
def test_fault_every_request(
    embedded_apiserver: APIServer, api_client: ApiClient, namespace: str, code: int
) -> None:
    embedded_apiserver.faults.fail(code, verbs=["create"], resources=["configmaps"])
    try:
        status, body = call(
            api_client,
            "POST",
            f"/api/v1/namespaces/{namespace}/configmaps",
            {"metadata": {"name": "c"}},
        )
        assert status == code and body["kind"] == "Status" and body["code"] == code
        assert call(api_client, "GET", f"/api/v1/namespaces/{namespace}/configmaps")[0] == 200
        assert (
            call(
                api_client,
                "POST",
                f"/api/v1/namespaces/{namespace}/secrets",
                {"metadata": {"name": "s"}},
            )[0]
            == 201
        )
    finally:
        embedded_apiserver.faults.reset()
    assert (
        call(
            api_client,
            "POST",
            f"/api/v1/namespaces/{namespace}/configmaps",
            {"metadata": {"name": "c"}},
        )[0]
        == 201
    )


def test_fault_every_nth(
    embedded_apiserver: APIServer, api_client: ApiClient, namespace: str
) -> None:
    embedded_apiserver.faults.fail(500, every=3, verbs=["get"])
    try:
        codes = [call(api_client, "GET", f"/api/v1/namespaces/{namespace}")[0] for _ in range(6)]
    finally:
        embedded_apiserver.faults.reset()
    assert codes == [200, 200, 500, 200, 200, 500]


def test_fault_probability_and_count(
    embedded_apiserver: APIServer, api_client: ApiClient, namespace: str
) -> None:
    embedded_apiserver.faults.fail(429, probability=0.5, count=3)
    try:
        codes = [call(api_client, "GET", f"/api/v1/namespaces/{namespace}")[0] for _ in range(40)]
    finally:
        embedded_apiserver.faults.reset()
    assert codes.count(429) == 3 and codes.count(200) == 37


def test_fault_status_subresource_filter(
    embedded_apiserver: APIServer, api_client: ApiClient, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/pods"
    _, p = call(api_client, "POST", path, pod("a"))
    embedded_apiserver.faults.fail(409, resources=["pods/status"])
    try:
        assert call(api_client, "PUT", f"{path}/a/status", p)[0] == 409
        assert call(api_client, "PUT", f"{path}/a", p)[0] == 200
    finally:
        embedded_apiserver.faults.reset()


def test_fault_latency(
    embedded_apiserver: APIServer, api_client: ApiClient, namespace: str
) -> None:
    embedded_apiserver.faults.add_latency(0.2, verbs=("list",))
    try:
        t = time.monotonic()
        call(api_client, "GET", f"/api/v1/namespaces/{namespace}/pods")
        assert time.monotonic() - t >= 0.2
    finally:
        embedded_apiserver.faults.reset()


def test_fault_close_watch_after_n(
    embedded_apiserver: APIServer, api_client: ApiClient, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for i in range(5):
        call(api_client, "POST", path, {"metadata": {"name": f"c{i}"}})
    embedded_apiserver.faults.close_watches_after(2)
    try:
        evs = watch_events(api_client, path, query=[("timeoutSeconds", 5)])
    finally:
        embedded_apiserver.faults.reset()
    assert len(evs) == 2


def test_fault_gone_for_next_watch(
    embedded_apiserver: APIServer, api_client: ApiClient, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    _, lst = call(api_client, "GET", path)
    rv = lst["metadata"]["resourceVersion"]
    embedded_apiserver.faults.gone_for_next_watches(1)
    try:
        evs = watch_events(api_client, path, query=[("resourceVersion", rv), ("timeoutSeconds", 1)])
        assert evs[0]["type"] == "ERROR" and evs[0]["object"]["code"] == 410
        evs = watch_events(api_client, path, query=[("resourceVersion", rv), ("timeoutSeconds", 1)])
        assert all(e["type"] != "ERROR" for e in evs)
    finally:
        embedded_apiserver.faults.reset()


def test_fault_compact(
    embedded_apiserver: APIServer, api_client: ApiClient, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    _, c = call(api_client, "POST", path, {"metadata": {"name": "c"}})
    call(api_client, "POST", path, {"metadata": {"name": "d"}})
    embedded_apiserver.faults.compact()
    evs = watch_events(
        api_client,
        path,
        query=[("resourceVersion", c["metadata"]["resourceVersion"]), ("timeoutSeconds", 1)],
    )
    assert evs[0]["type"] == "ERROR" and evs[0]["object"]["code"] == 410


def test_kubeconfig_loads_in_python_client(embedded_apiserver: APIServer, tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    embedded_apiserver.write_kubeconfig(path)
    cfg = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(config_file=str(path), client_configuration=cfg)
    with kubernetes.client.ApiClient(cfg) as c:
        assert kubernetes.client.CoreV1Api(c).read_namespace("default").metadata.name == "default"


def test_stop_ends_open_watches(tmp_path: Path) -> None:
    srv = APIServer()
    srv.start()
    client = _client(srv)
    out: list[object] = []

    def reader() -> None:
        try:
            out.extend(
                watch_events(
                    client, "/api/v1/namespaces/default/pods", query=[("timeoutSeconds", 30)]
                )
            )
        except Exception as exc:
            out.append(exc)

    t = threading.Thread(target=reader)
    t.start()
    time.sleep(0.3)
    srv.stop()
    t.join(10)
    assert not t.is_alive()
    client.close()
    json.dumps([])
