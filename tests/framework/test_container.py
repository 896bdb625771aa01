"""The runtime container builds lazily and any provider can be overridden."""

from __future__ import annotations

from typing import Any

import kubernetes
from dependency_injector import providers

from sedna.runtime import FakeClock, GMConfig, KubeClient, RuntimeContainer, UpstreamRegistry


def config(apiserver: Any, tmp_path: Any) -> GMConfig:
    path = tmp_path / "kubeconfig"
    apiserver.write_kubeconfig(path)
    return GMConfig.model_validate({"kubeConfig": str(path)})


def test_providers_build_from_config(apiserver: Any, tmp_path: Any) -> None:
    c = RuntimeContainer(config=config(apiserver, tmp_path))
    kube = c.kube()
    assert isinstance(kube, KubeClient)
    assert c.kube() is kube  # singletons: one client for every feature
    assert c.informers() is c.informers()
    assert isinstance(c.upstream(), UpstreamRegistry)
    assert c.worker_runtime() is c.worker_runtime()


def test_override_api_client_clock_and_downstream(apiserver: Any, tmp_path: Any) -> None:
    c = RuntimeContainer(config=GMConfig())
    cfg = apiserver.client_configuration()
    own_client = kubernetes.client.ApiClient(cfg)
    clock = FakeClock()
    sent: list[tuple[str, str]] = []
    c.api_client.override(providers.Object(own_client))
    c.clock.override(providers.Object(clock))
    c.downstream.override(providers.Object(lambda node, event, obj: sent.append((node, event))))
    # The informer factory and the event recorder are built on the overridden pieces.
    factory = c.informers()
    assert factory.clock is clock
    assert factory.client.api_client is own_client  # no kubeconfig was read
    c.downstream()("edge-1", "insert", {})
    assert sent == [("edge-1", "insert")]


def test_reset_override_restores_the_default() -> None:
    c = RuntimeContainer(config=GMConfig())
    marker = object()
    c.metrics.override(providers.Object(marker))
    assert c.metrics() is marker
    c.metrics.reset_override()
    assert c.metrics() is not marker
