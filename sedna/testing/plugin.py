"""The pytest fixtures of `sedna.testing`, registered through the `pytest11` entry point.

Installing sedna-gm makes them available to every test suite in that environment;
nothing needs importing. Every fixture name starts with `sedna_`, so none shadows a
fixture of your own. The heavy parts (the API server, the manager) are imported only
when a test asks for them, so a suite that uses none of this pays nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import kubernetes

    from sedna.runtime import Clock, KubeClient
    from sedna.testing.gm import GMHarness
    from sedna.testing.kubelet import Kubelet
    from sedna.testing.lc import LCBase
    from sedna.testing.logs import LogCapture


@pytest.fixture(scope="session")
def sedna_apiserver() -> Iterator[Any]:
    """An in-process API server with Sedna's CRDs, shared by the session (`.url`)."""
    from sedna.testing.apiserver import start_apiserver

    server = start_apiserver()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def sedna_api_client(sedna_apiserver: Any) -> Iterator[kubernetes.client.ApiClient]:
    """An official `kubernetes` client for `sedna_apiserver`."""
    from sedna.testing.apiserver import api_client_for

    client = api_client_for(sedna_apiserver)
    try:
        yield client
    finally:
        client.close()  # type: ignore[no-untyped-call]


@pytest.fixture()
def sedna_kube(sedna_api_client: kubernetes.client.ApiClient) -> KubeClient:
    """The runtime's raw client (dicts in, dicts out) for `sedna_apiserver`."""
    from sedna.runtime import KubeClient

    return KubeClient(sedna_api_client)


@pytest.fixture()
def sedna_namespace(sedna_kube: KubeClient) -> str:
    """A fresh namespace, so tests sharing the server do not see each other's objects."""
    from sedna.runtime import NAMESPACES

    name = f"t-{uuid.uuid4().hex[:10]}"
    sedna_kube.resource(NAMESPACES).create(
        None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    return name


GMFactory = Callable[..., "GMHarness"]


@pytest.fixture()
def sedna_gm(sedna_apiserver: Any, sedna_namespace: str) -> Iterator[GMFactory]:
    """`sedna_gm(features={"name": {options}}, plugins=None, clock=None)`: a started GM.

    It runs only the named features, watches only `sedna_namespace`, and is stopped
    after the test. Use `gm.manager` for the `Manager`, `gm.port` for the LC websocket.
    The server refuses (403) whatever the features' declared access does not grant, and
    the test then fails at teardown with a line naming each refused verb and resource.
    """
    from sedna.testing.apiserver import api_client_for
    from sedna.testing.gm import GMHarness

    gms: list[GMHarness] = []

    def start(
        features: dict[str, dict[str, Any]],
        plugins: dict[str, object] | None = None,
        clock: Clock | None = None,
        websocket: dict[str, Any] | None = None,
    ) -> GMHarness:
        gm = GMHarness(
            lambda: api_client_for(sedna_apiserver),
            sedna_namespace,
            features=features,
            plugins=plugins,
            clock=clock,
            websocket=websocket,
            apiserver=sedna_apiserver,
        )
        gms.append(gm)
        return gm.start()

    yield start
    for gm in gms:
        gm.stop()


@pytest.fixture()
def sedna_lc() -> Iterator[Callable[[GMHarness, str], LCBase]]:
    """`sedna_lc(gm, node)`: a LocalController of `node` speaking Sedna's LC protocol."""
    from sedna.testing.lc import LCBase

    lcs: list[LCBase] = []

    def connect(gm: GMHarness, node: str) -> LCBase:
        lc = LCBase(gm.port, node)
        lcs.append(lc)
        return lc

    yield connect
    for lc in lcs:
        lc.close()


@pytest.fixture()
def sedna_kubelet(sedna_api_client: kubernetes.client.ApiClient, sedna_namespace: str) -> Kubelet:
    """Moves the pods of `sedna_namespace` through phases when the test says so."""
    from sedna.testing.kubelet import Kubelet

    return Kubelet(sedna_api_client, sedna_namespace)


@pytest.fixture()
def sedna_logs() -> Iterator[LogCapture]:
    """The GM's log lines (loguru) while the test runs: `.contains(...)`, `.wait(...)`."""
    from sedna.testing.logs import capture_logs

    yield from capture_logs()
