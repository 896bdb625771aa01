"""/healthz, /readyz and /metrics say which check fails."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from sedna.runtime import Metrics
from sedna.runtime.health import HealthServer


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_readiness_names_the_failing_check() -> None:
    metrics = Metrics()
    metrics.lc_connected_nodes.set(3)
    server = HealthServer("127.0.0.1", 0, metrics.registry)
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
        code, text = get(base + "/metrics")
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


def test_idle_connections_cost_no_thread_each_and_are_dropped() -> None:
    """Regression: the metrics port opened a thread per idle connection, for ever."""
    import socket
    import threading

    from support.waiting import poll

    metrics = Metrics()
    server = HealthServer("127.0.0.1", 0, metrics.registry, workers=2, backlog=1, idle_timeout=0.5)
    server.start()
    try:
        idle = [socket.create_connection(("127.0.0.1", server.port), timeout=10) for _ in range(20)]
        health_threads = [t for t in threading.enumerate() if t.name.startswith("health_")]
        assert len(health_threads) <= 2
        # beyond pool and backlog the server closes at once; the others after idle_timeout
        for s in idle:
            s.settimeout(10)
            assert s.recv(10) == b""
            s.close()
        poll(lambda: get(f"http://127.0.0.1:{server.port}/healthz")[0] == 200, 5,
             interval=0.05, failure="the server answers again")  # fmt: skip
    finally:
        server.stop()
