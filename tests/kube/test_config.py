"""Building clients from Sedna's kubeConfig/master settings."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
import yaml

from sedna.embedded.apiserver import APIServer
from sedna.runtime.kube import (
    NAMESPACES,
    KubeClient,
    KubeConfigError,
    api_client_for_url,
    api_client_from_config,
)
from sedna.runtime.kube.config import REFRESH_INTERVAL_SECONDS


def test_kubeconfig_path(embedded_apiserver: APIServer, tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    embedded_apiserver.write_kubeconfig(path)
    client = api_client_from_config(str(path), "")
    assert client.configuration.host == embedded_apiserver.url
    assert client.configuration.connection_pool_maxsize >= 32
    assert KubeClient(client).resource(NAMESPACES).get(None, "default")


def test_master_overrides_the_kubeconfig_server(
    embedded_apiserver: APIServer, tmp_path: Path
) -> None:
    path = tmp_path / "kubeconfig"
    embedded_apiserver.write_kubeconfig(path)
    client = api_client_from_config(str(path), "http://127.0.0.1:1/")
    assert client.configuration.host == "http://127.0.0.1:1"
    # the kubeconfig's credentials are kept
    assert (
        client.configuration.auth_settings()["BearerToken"]["value"]
        == f"Bearer {embedded_apiserver.token}"
    )


def test_master_only(embedded_apiserver: APIServer) -> None:
    client = api_client_from_config("", embedded_apiserver.url)
    assert client.configuration.host == embedded_apiserver.url
    # the embedded server wants its token and CA, which a bare master URL does not carry
    client = api_client_for_url(
        embedded_apiserver.url,
        token=embedded_apiserver.token,
        ca_cert=str(embedded_apiserver.cert.ca_file),
    )
    assert KubeClient(client).resource(NAMESPACES).get(None, "default")


def test_url_helper_with_token() -> None:
    client = api_client_for_url("https://example.invalid:6443", token="t0k", verify_ssl=False)
    cfg = client.configuration
    assert cfg.host == "https://example.invalid:6443"
    assert cfg.get_api_key_with_prefix("authorization") == "Bearer t0k"
    with pytest.raises(KubeConfigError):
        api_client_for_url("example.invalid:6443")


def test_nothing_configured_outside_a_cluster(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(KubeConfigError, match="in-cluster"):
        api_client_from_config("", "")


def test_bad_kubeconfig_path_is_named(tmp_path: Path) -> None:
    with pytest.raises(KubeConfigError, match="nope"):
        api_client_from_config(str(tmp_path / "nope"), "")


def test_master_beside_a_kubeconfig_holds_after_the_credential_refresh(
    embedded_apiserver: APIServer, tmp_path: Path
) -> None:
    """client-go's BuildConfigFromFlags: `master` wins over the kubeconfig's server.

    The kubeconfig loader's credential hook (run before requests) used to set the
    kubeconfig's server again, so the first request already went there.
    """
    path = tmp_path / "kubeconfig"
    embedded_apiserver.write_kubeconfig(path)
    config = yaml.safe_load(path.read_text())
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"  # nothing listens
    path.write_text(yaml.safe_dump(config))
    client = api_client_from_config(str(path), embedded_apiserver.url)
    namespaces = KubeClient(client).resource(NAMESPACES)
    for _ in range(3):
        assert namespaces.get(None, "default")
    assert client.configuration.host == embedded_apiserver.url


EXEC_PLUGIN = """
import json, sys
with open(sys.argv[1], "a") as calls:
    calls.write("x\\n")
print(json.dumps({
    "apiVersion": "client.authentication.k8s.io/v1beta1",
    "kind": "ExecCredential",
    # already expired: the loader asks the plugin again at every refresh
    "status": {"token": sys.argv[2], "expirationTimestamp": "2000-01-01T00:00:00Z"},
}))
"""


def _exec_kubeconfig(server: APIServer, tmp_path: Path) -> tuple[Path, Path]:
    """A kubeconfig whose credential comes from EXEC_PLUGIN, and the file of its runs."""
    plugin = tmp_path / "plugin.py"
    plugin.write_text(EXEC_PLUGIN)
    calls = tmp_path / "calls"
    calls.touch()
    path = tmp_path / "kubeconfig"
    server.write_kubeconfig(path)
    config = yaml.safe_load(path.read_text())
    config["users"][0]["user"] = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": sys.executable,
            "args": [str(plugin), str(calls), server.token],
            "interactiveMode": "Never",
        }
    }
    path.write_text(yaml.safe_dump(config))
    return path, calls


def test_an_exec_credential_is_refreshed_at_most_once_a_second_not_per_request(
    embedded_apiserver: APIServer, tmp_path: Path
) -> None:
    path, calls = _exec_kubeconfig(embedded_apiserver, tmp_path)
    started = time.monotonic()
    client = api_client_from_config(str(path), "")
    namespaces = KubeClient(client).resource(NAMESPACES)
    for _ in range(40):
        assert namespaces.get(None, "default")  # the plugin's token is the one sent
    elapsed = time.monotonic() - started
    runs = len(calls.read_text().splitlines())
    # one run when the kubeconfig loads, then at most one per second of requests
    assert 1 <= runs <= 2 + elapsed / REFRESH_INTERVAL_SECONDS, (runs, elapsed)


def test_an_expired_exec_credential_is_asked_for_again(
    embedded_apiserver: APIServer, tmp_path: Path
) -> None:
    """The throttle delays a refresh by at most its interval; it never stops it."""
    path, calls = _exec_kubeconfig(embedded_apiserver, tmp_path)
    client = api_client_from_config(str(path), "")
    namespaces = KubeClient(client).resource(NAMESPACES)
    before = len(calls.read_text().splitlines())
    deadline = time.monotonic() + 60
    while len(calls.read_text().splitlines()) < before + 2:
        assert time.monotonic() < deadline, "the expired credential was never refreshed"
        assert namespaces.get(None, "default")
