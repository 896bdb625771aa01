"""/healthz, /readyz and /metrics say which check fails (the listener's defences and
/metrics authentication: test_health_listener.py)."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from sedna.runtime import Metrics
from sedna.runtime.health import HealthServer
from sedna.runtime.metrics_auth import BearerAuthenticator


def get(url: str, token: str | None = None) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_readiness_names_the_failing_check() -> None:
    metrics = Metrics()
    metrics.lc_connected_nodes.set(3)
    auth = BearerAuthenticator(lambda: {"s3cret"})
    server = HealthServer("127.0.0.1", 0, metrics.registry, authenticator=auth)
    synced = {"value": False}
    server.add_liveness("ping", lambda: True)
    server.add_readiness("informer-sync", lambda: synced["value"])
    server.add_readiness("broken", lambda: 1 / 0 == 0)
    server.start()
    base = f"http://127.0.0.1:{server.port}"
    try:
        assert get(base + "/healthz") == (200, "[+]ping ok\nhealthz check passed\n")
        code, text = get(base + "/readyz")
        assert code == 503
        assert "[-]informer-sync failed" in text
        assert "[-]broken failed" in text
        synced["value"] = True
        code, text = get(base + "/readyz")
        assert (code, "[+]informer-sync ok" in text) == (503, True)
        code, text = get(base + "/metrics", "s3cret")
        assert code == 200
        assert "lc_connected_nodes 3.0" in text
        assert get(base + "/nope")[0] == 404
    finally:
        server.stop()


def test_stop_frees_the_port() -> None:
    server = HealthServer("127.0.0.1", 0, Metrics().registry)
    server.start()
    port = server.port
    server.stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
