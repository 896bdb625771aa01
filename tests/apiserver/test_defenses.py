"""The embedded API server defends itself: authentication, bounded bodies, private state.

One regression test per finding: unauthenticated reads of Secrets, the YAML alias bomb,
a body nested too deep to be served back, 64 MB bodies, a history bounded by count
only, connections that never finish their headers, a world-readable state.db.
"""

from __future__ import annotations

import os
import socket
import ssl
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from sedna.embedded.apiserver import APIServer
from sedna.embedded.apiserver.bodies import MAX_BODY_BYTES, encode_object
from sedna.embedded.apiserver.errors import APIError
from sedna.embedded.apiserver.persistence import SQLitePersister
from sedna.embedded.apiserver.server import is_loopback
from sedna.embedded.apiserver.watch import Event, WatchHub

from .helpers import call

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("SEDNA_TEST_KUBECONFIG")),
    reason="server-internal test: not applicable to a real cluster",
)


def _raw(srv: APIServer, path: str, token: str | None) -> int:
    """Status of a GET with the given bearer token (None: no Authorization header)."""
    cfg = srv.client_configuration()
    client = kubernetes.client.ApiClient(cfg)
    try:
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        resp = client.rest_client.pool_manager.request("GET", srv.url + path, headers=headers)
        return int(resp.status)
    finally:
        client.close()


@pytest.fixture()
def own() -> Iterator[APIServer]:
    srv = APIServer(idle_timeout=0.5, tokens=["first-token"], token_source=lambda: ["added"])
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def test_every_request_needs_a_token_but_the_probes(own: APIServer) -> None:
    assert _raw(own, "/api/v1/secrets", None) == 401
    assert _raw(own, "/api/v1/secrets", "wrong") == 401
    assert _raw(own, "/api/v1/secrets", "first-token") == 200
    assert _raw(own, "/api/v1/secrets", "added") == 200  # the token source adds more
    assert _raw(own, "/healthz", None) == 200
    assert _raw(own, "/version", None) == 200


def test_the_kubeconfig_carries_the_token_and_ca_and_is_private(
    own: APIServer, tmp_path: Path
) -> None:
    path = tmp_path / "kubeconfig"
    own.write_kubeconfig(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    cfg = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(config_file=str(path), client_configuration=cfg)
    with kubernetes.client.ApiClient(cfg) as c:
        assert kubernetes.client.CoreV1Api(c).read_namespace("default").metadata.name


def test_a_yaml_alias_bomb_is_refused(api_client: Any, namespace: str) -> None:
    bomb = (
        'a: &a ["x","x","x","x","x","x","x","x","x"]\n'
        + "".join(f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
                  for p, c in zip("abcdefgh", "bcdefghi", strict=True))
        + "kind: ConfigMap\napiVersion: v1\nmetadata: {name: bomb}\n"
    )  # fmt: skip
    assert len(bomb) < 500
    status, body = call(
        api_client,
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        bomb,
        content_type="application/yaml",
    )
    assert status == 400 and "aliases are not accepted" in body["message"]
    # the server is alive and answers lists of the kind
    assert call(api_client, "GET", f"/api/v1/namespaces/{namespace}/configmaps")[0] == 200


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"a": value}
    return value


def test_a_body_nested_too_deep_is_refused_and_lists_keep_working(
    api_client: Any, namespace: str
) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "deep"}}
    status, body = call(
        api_client, "POST", f"/api/v1/namespaces/{namespace}/configmaps", dict(cm, x=_nested(300))
    )
    assert status == 400 and "nests deeper" in body["message"]
    yaml_deep = "x: " + "[" * 300 + "]" * 300 + "\nkind: ConfigMap\n"
    status, _ = call(
        api_client,
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        yaml_deep,
        content_type="application/yaml",
    )
    assert status == 400
    assert call(api_client, "GET", "/api/v1/configmaps")[0] == 200


def test_what_cannot_be_served_back_is_never_stored() -> None:
    with pytest.raises(APIError) as err:
        encode_object({"metadata": {"name": "x"}, "x": _nested(300)})
    assert err.value.code == 422
    with pytest.raises(APIError) as err:
        encode_object({"x": "y" * (MAX_BODY_BYTES + 1)})
    assert err.value.code == 413


def test_a_body_over_3_mib_gets_413(api_client: Any, namespace: str) -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "big"},
        "data": {"k": "v" * (MAX_BODY_BYTES + 10)},
    }
    status, body = call(api_client, "POST", f"/api/v1/namespaces/{namespace}/configmaps", cm)
    assert status == 413 and body["reason"] == "RequestEntityTooLarge"


def test_the_watch_history_is_bounded_in_bytes() -> None:
    hub = WatchHub(history=1000, history_bytes=10_000)
    for rv in range(1, 21):
        obj = {"metadata": {"name": f"o{rv}"}, "data": "x" * 1000}
        hub.publish(Event("ADDED", ("", "configmaps"), "ns", obj, None, rv))
    assert hub.bytes <= 10_000 and len(hub.history) < 20
    assert hub.too_old(1) and not hub.too_old(20)
    assert hub.bytes == sum(len(e.raw()) for e in hub.history)


def test_a_connection_that_never_finishes_its_headers_is_closed(own: APIServer) -> None:
    ctx = ssl.create_default_context(cafile=str(own.cert.ca_file))
    with (
        socket.create_connection(("127.0.0.1", own.port), timeout=10) as raw,
        ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        tls.sendall(b"GET /api HTTP/1.1\r\nHost: x\r\n")  # never the blank line
        tls.settimeout(10)
        try:
            data = tls.recv(100)
        except (ConnectionResetError, ssl.SSLError):
            data = b""
        assert data == b""  # closed by the server well before our 10 s


def test_state_db_and_its_wal_are_private(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        db = tmp_path / "state.db"
        p = SQLitePersister(db)
        p.save(("", "secrets"), "ns", "s", {"metadata": {"name": "s"}}, 1)
        for f in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
            assert stat.S_IMODE(f.stat().st_mode) == 0o600, f
        p.close()
    finally:
        os.umask(old)


def test_loopback_detection() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.0.0.1")


def test_a_non_loopback_address_is_warned_about() -> None:
    from loguru import logger

    lines: list[str] = []
    sink = logger.add(lambda m: lines.append(str(m)), level="WARNING")
    try:
        APIServer("0.0.0.0").stop()  # never started: nothing binds
        APIServer("127.0.0.1").stop()
    finally:
        logger.remove(sink)
    assert len(lines) == 1 and "0.0.0.0, not a loopback address" in lines[0]
