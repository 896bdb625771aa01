"""Fixtures: a started MessageLayer on a free port, its metrics, captured loguru output,
and Node objects on the API server."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import kubernetes
import pytest
from loguru import logger

from sedna.runtime.clock import Clock
from sedna.runtime.config import WebsocketConfig
from sedna.runtime.messaging import MessageLayer, UpstreamRegistry
from sedna.runtime.metrics import Metrics

LayerFactory = Callable[..., MessageLayer]


@pytest.fixture()
def metrics() -> Metrics:
    return Metrics()


@pytest.fixture()
def make_layer(metrics: Metrics) -> Iterator[LayerFactory]:
    """Build and start a layer; keyword arguments are WebsocketConfig fields (auth none unless
    given) and MessageLayer's own keywords, plus `start`."""
    layers: list[MessageLayer] = []

    def build(
        *,
        token_provider: Callable[[], Iterable[str]] | None = None,
        start: bool = True,
        upstream: UpstreamRegistry | None = None,
        upstream_backlog: int = 10_000,
        clock: Clock | None = None,
        **fields: Any,
    ) -> MessageLayer:
        fields.setdefault("address", "127.0.0.1")
        fields.setdefault("port", 0)
        fields.setdefault("auth", "none")
        # transport tests report freely; the node-scoped checks have tests of their own
        fields.setdefault("authorizeReports", False)
        layer = MessageLayer(
            WebsocketConfig(**fields),
            metrics=metrics,
            token_provider=token_provider,
            upstream=upstream,
            upstream_backlog=upstream_backlog,
            clock=clock,
        )
        layers.append(layer)
        if start:
            layer.start()
        return layer

    yield build
    for layer in layers:
        layer.stop()


@pytest.fixture()
def logs() -> Iterator[list[str]]:
    """Every loguru line at every level, with tracebacks (diagnose on: locals shown too)."""
    lines: list[str] = []
    sink_id = logger.add(
        lines.append, level="TRACE", format="{level} {message}", diagnose=True, backtrace=True
    )
    yield lines
    logger.remove(sink_id)


class Nodes:
    """Node objects of one test, created and deleted through the official client."""

    def __init__(self, api_client: kubernetes.client.ApiClient) -> None:
        self.core = kubernetes.client.CoreV1Api(api_client)
        self.created: list[str] = []
        self._prefix = f"edge-{uuid.uuid4().hex[:8]}"

    def name(self, suffix: str) -> str:
        return f"{self._prefix}-{suffix}"

    def create(self, name: str, *, heavy: bool = False) -> str:
        """`heavy`: with a status as big as a real kubelet's (images, conditions)."""
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
        if heavy:
            body["status"] = {
                "images": [
                    {"names": [f"registry/img-{i}:v1"], "sizeBytes": 10**8} for i in range(40)
                ],
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            }
        self.core.create_node(body)
        self.created.append(name)
        return name

    def delete(self, name: str) -> None:
        self.core.delete_node(name)

    def cleanup(self) -> None:
        for name in self.created:
            with contextlib.suppress(kubernetes.client.ApiException):
                self.core.delete_node(name)


@pytest.fixture()
def nodes(api_client: kubernetes.client.ApiClient) -> Iterator[Nodes]:
    n = Nodes(api_client)
    yield n
    n.cleanup()
