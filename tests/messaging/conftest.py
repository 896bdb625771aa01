"""Fixtures: a started MessageLayer on a free port, its metrics, and captured loguru output."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

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
