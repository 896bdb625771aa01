"""Shared fixtures: the reference data, an API server and a client for it.

By default the tests run against the in-process API server. With
``SEDNA_TEST_KUBECONFIG`` naming a kubeconfig they run against that cluster instead
(its Sedna CRDs must be installed); tests of server internals then skip themselves
through the ``embedded_apiserver`` fixture.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from sedna.embedded.apiserver import APIServer

PROJECT_ROOT = Path(__file__).resolve().parents[1]
REAL_KUBECONFIG = os.environ.get("SEDNA_TEST_KUBECONFIG")


@pytest.fixture(scope="session")
def sedna_reference() -> Path:
    """``../shared/sedna-reference`` relative to the project root."""
    return PROJECT_ROOT.parent / "shared" / "sedna-reference"


class _RemoteCluster:
    """Stands in for ``APIServer`` when the tests target a real cluster."""

    def __init__(self, kubeconfig: str) -> None:
        cfg = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
        self.configuration = cfg
        self.url = cfg.host
        self.server = None
        self.kubeconfig = kubeconfig


@pytest.fixture(scope="session")
def apiserver(sedna_reference: Path) -> Iterator[Any]:
    """A running API server with Sedna's CRDs installed (or the real cluster)."""
    if REAL_KUBECONFIG:
        yield _RemoteCluster(REAL_KUBECONFIG)
        return
    srv = APIServer("127.0.0.1", 0)
    srv.start()
    srv.install_crds_from_dir(sedna_reference / "crds")
    srv.server = srv  # type: ignore[attr-defined]  # contracts.md: `.server`
    try:
        yield srv
        _check_gm_rbac()
    finally:
        srv.stop()


def _check_gm_rbac() -> None:
    """Fail the session when the GM made a call config/rbac.yaml does not grant (a 403 on
    a real cluster); see `support.rbac`."""
    from support.rbac import RBAC_PATH, denied_gm_calls, describe

    from sedna.embedded.apiserver import PROCESS_REQUESTS

    # every in-process server of the session: this one and those tests ran themselves
    denied = denied_gm_calls(PROCESS_REQUESTS)
    if denied:
        calls = describe(denied).replace("\n", "\n  ")
        pytest.fail(f"the GM made calls {RBAC_PATH.name} does not grant:\n  {calls}")


@pytest.fixture(scope="session")
def api_calls(apiserver: Any) -> Any:
    """The session server's `RequestRecorder` (every distinct call, by user agent)."""
    if not isinstance(apiserver, APIServer):
        pytest.skip("the request recorder is the in-process server's")
    return apiserver.requests


@pytest.fixture()
def embedded_apiserver(apiserver: Any) -> APIServer:
    """The in-process server itself, for tests of its internals (faults, restarts)."""
    if not isinstance(apiserver, APIServer):
        pytest.skip("server-internal test: not applicable to a real cluster")
    apiserver.faults.reset()
    return apiserver


def make_configuration(apiserver: Any) -> kubernetes.client.Configuration:
    """A client configuration for the fixture's server."""
    if isinstance(apiserver, _RemoteCluster):
        return apiserver.configuration
    cfg = kubernetes.client.Configuration()
    cfg.host = apiserver.url
    return cfg


@pytest.fixture(scope="session")
def api_client(apiserver: Any) -> Iterator[kubernetes.client.ApiClient]:
    """An official ``kubernetes`` client for the server."""
    client = kubernetes.client.ApiClient(make_configuration(apiserver))
    try:
        yield client
    finally:
        client.close()


@pytest.fixture()
def namespace(api_client: kubernetes.client.ApiClient) -> Iterator[str]:
    """A fresh namespace, so tests sharing the server do not see each other's objects."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    core = kubernetes.client.CoreV1Api(api_client)
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    if REAL_KUBECONFIG:
        with contextlib.suppress(kubernetes.client.ApiException):
            core.delete_namespace(name)
