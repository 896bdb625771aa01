"""The connection pool holds every informer's watch and still has room for requests."""

from __future__ import annotations

import copy

import kubernetes

from sedna.runtime.informers import SharedInformerFactory
from sedna.runtime.kube import DEFAULT_POOL_SIZE, PODS, KubeClient, Resource

from .conftest import FAST


def test_the_pool_grows_with_the_watches_started_and_started_later(
    api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    """Regression: with the features' label-scoped informers (a pod, Deployment, Service
    and HPA informer per feature kind) the watches alone took the 32 pooled connections;
    every request beyond them opened a TLS connection and discarded it after one use
    ("Connection pool is full, discarding connection")."""
    cfg = copy.copy(api_client.configuration)
    cfg.connection_pool_maxsize = 4  # as a fresh client has it (the session's has grown)
    own = kubernetes.client.ApiClient(cfg)
    kube = KubeClient(own)
    assert own.configuration.connection_pool_maxsize == DEFAULT_POOL_SIZE
    factory = SharedInformerFactory(kube, namespace=namespace, min_resync_period=0, options=FAST)
    configmaps = Resource("", "v1", "configmaps", "ConfigMap")
    try:
        for i in range(40):
            factory.informer(PODS, label_selector=f"fleet-{i}")
        factory.start()
        assert own.configuration.connection_pool_maxsize >= 40 + DEFAULT_POOL_SIZE
        factory.informer(configmaps)  # after start: started at once, the pool grows
        assert own.configuration.connection_pool_maxsize >= 41 + DEFAULT_POOL_SIZE
        assert factory.wait_for_cache_sync(timeout=20)
    finally:
        factory.stop(timeout=10)
