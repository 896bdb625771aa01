"""Building clients from Sedna's kubeConfig/master settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from sedna.embedded.apiserver import APIServer
from sedna.runtime.kube import (
    NAMESPACES,
    KubeClient,
    KubeConfigError,
    api_client_for_url,
    api_client_from_config,
)


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
