"""The GM's /readyz fails, naming the `apiserver` check, while the GM cannot reach its
API server, and passes again once it can; asked on demand, never polled."""

from __future__ import annotations

import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from dependency_injector import providers

from sedna.embedded.apiserver import APIServer
from sedna.manager import Manager
from sedna.runtime import ControllerContext, Feature, RuntimeContainer, hookimpl
from sedna.runtime.api_reachability import APIReachability
from sedna.runtime.config import GMConfig
from sedna.runtime.kube import PODS, SERVICES, KubeClient, api_client_from_config
from sedna.testing import wait_until

TOKEN = "readyz-test-token"


class _Idle:
    def __init__(self, ctx: ControllerContext) -> None:
        pass

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


class _Plugin:
    @hookimpl
    def sedna_features(self) -> list[Feature]:
        return [Feature("readyzdemo", [], _Idle)]

    @hookimpl
    def sedna_configure_container(self, container: RuntimeContainer) -> None:
        def send(node: str, event: str, obj: Mapping[str, Any]) -> None:
            pass

        container.downstream.override(providers.Object(send))  # no websocket server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _server(port: int, pki: Path) -> APIServer:
    srv = APIServer("127.0.0.1", port, pki_dir=pki, tokens=[TOKEN], schema_validation=False)
    srv.start()
    return srv


def _readyz(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=10) as r:
            return int(r.status), r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture()
def api_port() -> int:
    return _free_port()


@pytest.fixture()
def server(api_port: int, tmp_path: Path) -> Iterator[list[APIServer]]:
    """The GM's API server (a list: the test replaces it on restart)."""
    running = [_server(api_port, tmp_path / "pki")]
    yield running
    for srv in running:
        srv.stop()


def test_gm_readyz_follows_its_api_server(
    server: list[APIServer], api_port: int, tmp_path: Path
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    server[0].write_kubeconfig(kubeconfig)
    config = GMConfig.model_validate(
        {
            "kubeConfig": str(kubeconfig),
            "metrics": {"enabled": True, "address": "127.0.0.1", "port": 0, "auth": "none"},
        }
    )
    manager = Manager(config, extra_plugins={"readyzdemo": _Plugin()}, use_entry_points=False)
    runner = threading.Thread(target=manager.run, daemon=True)
    runner.start()
    try:
        wait_until(lambda: manager.health is not None and manager.health.port > 0, what="health")
        assert manager.health is not None
        port = manager.health.port
        wait_until(lambda: _readyz(port)[0] == 200, what="ready")
        assert "[+]apiserver ok" in _readyz(port)[1]

        server[0].stop()
        wait_until(lambda: _readyz(port)[0] == 503, what="not ready without its API server")
        code, body = _readyz(port)
        assert code == 503
        assert "[-]apiserver failed: cannot reach the API server https://127.0.0.1:" in body
        assert "readyz check failed" in body

        server.append(_server(api_port, tmp_path / "pki"))  # same port, PKI and token
        wait_until(lambda: _readyz(port)[0] == 200, what="ready again")
    finally:
        manager.request_stop("test over")
        runner.join(timeout=30)


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _kube(srv: APIServer, tmp_path: Path) -> KubeClient:
    path = tmp_path / "kc"
    srv.write_kubeconfig(path)
    return KubeClient(api_client_from_config(str(path), ""), pool_size=None)


def test_answers_are_reused_briefly_and_probes_do_not_pile_up(
    server: list[APIServer], tmp_path: Path
) -> None:
    clock = _Clock()
    check = APIReachability(_kube(server[0], tmp_path), cache_seconds=2.0, clock=clock)
    assert check() == (True, "")
    assert check() == (True, "") and check.probes == 1
    clock.now = 2.5
    results: list[tuple[bool, str]] = []
    threads = [threading.Thread(target=lambda: results.append(check())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert results == [(True, "")] * 8 and check.probes == 2


def test_a_server_that_never_answers_fails_within_the_timeout(tmp_path: Path) -> None:
    """A peer that accepts connections but never speaks TLS (a hung server)."""
    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(16)
        cfg = kubernetes.client.Configuration()
        cfg.host = f"https://127.0.0.1:{hung.getsockname()[1]}"
        cfg.api_key = {"BearerToken": "x"}
        check = APIReachability(KubeClient(kubernetes.client.ApiClient(cfg)), timeout=0.5)
        good, reason = check()
    assert not good
    assert reason.startswith(f"cannot reach the API server {cfg.host}: ") and len(reason) < 400


def test_a_refused_token_is_not_ready(server: list[APIServer], tmp_path: Path) -> None:
    kube = _kube(server[0], tmp_path)
    kube.api_client.configuration.api_key = {"BearerToken": "wrong"}
    kube.api_client.configuration.api_key_prefix = {"BearerToken": "Bearer"}
    good, reason = APIReachability(kube)()
    assert not good and "Unauthorized" in reason, reason


class _Lister:
    """A controller whose informers must all sync before the GM may say it is ready."""

    def __init__(self, ctx: ControllerContext) -> None:
        ctx.informers.informer(SERVICES)
        ctx.informers.informer(PODS)

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


class _ListingPlugin(_Plugin):
    @hookimpl
    def sedna_features(self) -> list[Feature]:
        return [Feature("readyzlisting", [], _Lister)]


def test_not_ready_before_every_informer_has_synced(
    server: list[APIServer], tmp_path: Path
) -> None:
    """Readiness means every informer synced: an informer whose list keeps failing keeps
    the GM not ready while the others synced; once its list goes through, it is ready."""
    srv = server[0]
    kubeconfig = tmp_path / "kubeconfig"
    srv.write_kubeconfig(kubeconfig)
    failing = srv.faults.fail(500, verbs=["list"], resources=["services"])
    config = GMConfig.model_validate(
        {
            "kubeConfig": str(kubeconfig),
            "metrics": {"enabled": True, "address": "127.0.0.1", "port": 0, "auth": "none"},
        }
    )
    manager = Manager(
        config, extra_plugins={"readyzlisting": _ListingPlugin()}, use_entry_points=False
    )
    runner = threading.Thread(target=manager.run, daemon=True)
    runner.start()
    try:
        wait_until(lambda: manager.health is not None and manager.health.port > 0, what="health")
        assert manager.health is not None
        port = manager.health.port
        informers = manager.container.informers()
        pods = informers.informer(PODS)
        wait_until(lambda: pods.has_synced() and failing.seen >= 2, what="a retried list")
        code, body = _readyz(port)
        assert code == 503, body
        assert not informers.informer(SERVICES).has_synced()
        srv.faults.rules.remove(failing)
        wait_until(lambda: _readyz(port)[0] == 200, timeout=30, what="ready once synced")
        assert all(inf.has_synced() for inf in informers.informers)
    finally:
        manager.request_stop("test over")
        runner.join(timeout=30)
