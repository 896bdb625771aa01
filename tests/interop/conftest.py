"""Fixtures of the interop tests: an API server of their own (Sedna's CRDs from the
package, schema validation on), this project's GM on it, and Sedna's real LC."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from sedna.embedded.apiserver import APIServer
from sedna.testing import GMHarness, Kubelet, api_client_for, start_apiserver

from .peers import RealLC, free_port, lc_binary

ALL_FEATURES = (
    "dataset",
    "incremental_learning",
    "lifelong_learning",
    "joint_inference",
    "federated_learning",
    "object_search",
    "object_tracking",
    "feature_extraction",
    "reid",
    "video_analytics",
)


@pytest.fixture(scope="module")
def server() -> Iterator[APIServer]:
    srv = start_apiserver()
    try:
        yield srv
    finally:
        srv.stop()


def namespace_body(name: str) -> kubernetes.client.V1Namespace:
    return kubernetes.client.V1Namespace(metadata=kubernetes.client.V1ObjectMeta(name=name))


@pytest.fixture()
def ns(server: APIServer) -> str:
    name = f"interop-{uuid.uuid4().hex[:8]}"
    with api_client_for(server) as client:
        kubernetes.client.CoreV1Api(client).create_namespace(namespace_body(name))
    return name


@pytest.fixture()
def client(server: APIServer) -> Iterator[kubernetes.client.ApiClient]:
    with api_client_for(server) as c:
        yield c


@pytest.fixture()
def kubelet(client: kubernetes.client.ApiClient, ns: str) -> Kubelet:
    return Kubelet(client, ns)


@pytest.fixture()
def gm(server: APIServer, ns: str) -> Iterator[GMHarness]:
    """This project's GM with every feature, on the test's namespace, no LC auth (the
    real LC sends no token)."""
    features: Mapping[str, Mapping[str, Any]] = {f: {} for f in ALL_FEATURES}
    # a fixed port, so that a restarted GM is where the LCs dial again
    harness = GMHarness(
        lambda: api_client_for(server), ns, features=features, websocket={"port": free_port()}
    )
    harness.start()
    try:
        yield harness
    finally:
        harness.stop()


@pytest.fixture()
def real_lc(gm: GMHarness, tmp_path: Path) -> Iterator[Callable[[str], RealLC]]:
    """Start Sedna's real LC as node `name` against the test's GM (skips without it)."""
    binary = lc_binary()
    started: list[RealLC] = []

    def start(name: str) -> RealLC:
        lc = RealLC(binary, tmp_path / name, name, gm.port).start()
        started.append(lc)
        return lc

    yield start
    for lc in started:
        lc.stop()
