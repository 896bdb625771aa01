"""/metrics tokens from gm.yaml: a Secret read through the in-process API server (cached,
one token set, at most one read per TTL), a file, or `none`; and the GM's wiring."""

from __future__ import annotations

import base64
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from dependency_injector import providers

from sedna.manager import Manager
from sedna.runtime import FakeClock, GMConfig, RuntimeContainer
from sedna.runtime.config import ConfigError, load_config
from sedna.runtime.kube import SECRETS, KubeClient
from sedna.runtime.metrics_auth import SECRET_TTL_SECONDS
from sedna.startup import StartupError


def secret(namespace: str, token: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "metrics-token", "namespace": namespace},
        "data": {"token": base64.b64encode(token.encode()).decode()},
    }


def container(apiserver: Any, metrics: dict[str, Any], clock: FakeClock) -> RuntimeContainer:
    c = RuntimeContainer(config=GMConfig.model_validate({"metrics": metrics}))
    c.api_client.override(
        providers.Object(kubernetes.client.ApiClient(apiserver.client_configuration()))
    )
    c.clock.override(providers.Object(clock))
    return c


def test_secret_tokens_are_cached_and_rotation_is_seen_after_the_ttl(
    apiserver: Any, api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    kube = KubeClient(api_client)
    kube.resource(SECRETS).create(namespace, secret(namespace, "first"))
    clock = FakeClock()
    c = container(apiserver, {"tokenSecret": f"{namespace}/metrics-token"}, clock)
    auth = c.metrics_authenticator()
    assert auth is not None
    assert auth.status(["Bearer first"]) == 200
    assert auth.status(["Bearer made-up"]) == 401
    body = kube.resource(SECRETS).get(namespace, "metrics-token")
    body["data"]["token"] = base64.b64encode(b"second").decode()
    kube.resource(SECRETS).replace(namespace, "metrics-token", body)
    # within the TTL the cached token set answers: no API read per request
    for i in range(50):
        assert auth.status([f"Bearer guess-{i}"]) == 401
    assert auth.status(["Bearer first"]) == 200
    clock.step(SECRET_TTL_SECONDS)
    assert auth.status(["Bearer second"]) == 200
    assert auth.status(["Bearer first"]) == 401
    kube.resource(SECRETS).delete(namespace, "metrics-token")
    clock.step(SECRET_TTL_SECONDS)
    assert auth.status(["Bearer second"]) == 401  # gone: nobody


def test_a_missing_secret_refuses_everyone(apiserver: Any, namespace: str) -> None:
    c = container(apiserver, {"tokenSecret": f"{namespace}/absent"}, FakeClock())
    auth = c.metrics_authenticator()
    assert auth is not None and auth.status(["Bearer anything"]) == 401


def test_none_is_no_authenticator_and_token_needs_a_source(apiserver: Any) -> None:
    assert container(apiserver, {"auth": "none"}, FakeClock()).metrics_authenticator() is None
    with pytest.raises(ValueError, match=r"metrics\.tokenFile nor metrics\.tokenSecret"):
        container(apiserver, {}, FakeClock()).metrics_authenticator()


def test_gm_yaml_keys(tmp_path: Path) -> None:
    path = tmp_path / "gm.yaml"
    path.write_text("metrics: {tokenFile: token, auth: token}\n")
    cfg = load_config(path, environ={})
    assert cfg.metrics.tokenFile == str(tmp_path / "token")  # relative to the file
    assert cfg.metrics.auth == "token" and cfg.metrics.requestTimeoutSeconds > 0
    for bad, words in [
        ("metrics: {auth: basic}", "metrics.auth: expected one of"),
        ("metrics: {tokenSecret: just-a-name}", "expected 'namespace/name'"),
        ("metrics: {requestTimeoutSeconds: 0}", "metrics.requestTimeoutSeconds"),
        ("metrics: {maxConnectionsPerPeer: 0}", "metrics.maxConnectionsPerPeer"),
    ]:
        path.write_text(bad + "\n")
        with pytest.raises(ConfigError, match=words):
            load_config(path, environ={})


def _manager(apiserver: Any, tmp_path: Path, metrics: dict[str, Any]) -> Manager:
    kubeconfig = tmp_path / "kubeconfig"
    apiserver.write_kubeconfig(kubeconfig)
    config = GMConfig.model_validate(
        {
            "kubeConfig": str(kubeconfig),
            "namespace": "metrics-auth-unused",
            "websocket": {"address": "127.0.0.1", "port": 0, "auth": "none"},
            "metrics": {"address": "127.0.0.1", "port": 0, **metrics},
            "features": {},
        }
    )
    return Manager(config, use_entry_points=False)


def test_the_gm_refuses_to_start_without_a_metrics_token(apiserver: Any, tmp_path: Path) -> None:
    manager = _manager(apiserver, tmp_path, {})
    with pytest.raises(StartupError, match=r"metrics\.auth is token"):
        manager.start()
    manager.stop()


def test_the_gm_serves_metrics_to_the_token_holder(apiserver: Any, tmp_path: Path) -> None:
    token_file = tmp_path / "metrics-token"
    token_file.write_text("scrape-me\n")
    manager = _manager(apiserver, tmp_path, {"tokenFile": str(token_file)})
    manager.start()
    try:
        assert manager.health is not None
        base = f"http://127.0.0.1:{manager.health.port}"
        with urllib.request.urlopen(base + "/healthz", timeout=10) as r:
            assert r.status == 200
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(base + "/metrics", timeout=10)
        assert refused.value.code == 401
        req = urllib.request.Request(
            base + "/metrics", headers={"Authorization": "Bearer scrape-me"}
        )
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 200 and b"leader_election_is_leader" in r.read()
    finally:
        manager.stop()


def test_rbac_grants_the_metrics_secret_by_name_and_a_token_file_nothing() -> None:
    from sedna.rbac import grants

    def secret_grants(metrics: dict[str, Any]) -> set[tuple[str | None, tuple[str, ...]]]:
        cfg = GMConfig.model_validate({"websocket": {"auth": "none"}, "metrics": metrics})
        return {(g.namespace, g.names) for g in grants(cfg, []) if g.resource == "secrets"}

    assert secret_grants({"tokenSecret": "sedna/metrics"}) == {("sedna", ("metrics",))}
    assert secret_grants({"tokenFile": "/metrics-token/token"}) == set()
    assert secret_grants({"auth": "none", "tokenSecret": "sedna/metrics"}) == set()
