"""The runtime's services as dependency-injector providers.

An embedding application overrides any provider before the manager builds from it,
e.g. `container.downstream.override(providers.Object(my_send))` to use its own edge
transport; features never know the difference.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from dependency_injector import containers, providers
from kubernetes.client import ApiClient

from sedna.runtime.clock import Clock, RealClock
from sedna.runtime.config import GMConfig
from sedna.runtime.events import EventRecorder
from sedna.runtime.informers import SharedInformerFactory
from sedna.runtime.kube import (
    GM_USER_AGENT,
    NODES,
    SECRETS,
    KubeClient,
    NotFound,
    api_client_from_config,
)
from sedna.runtime.messaging import MessageLayer, file_token_provider, secret_token_provider
from sedna.runtime.messaging.auth import NODE_LABEL, NodeTokenProvider, node_token_provider
from sedna.runtime.metrics import Metrics
from sedna.runtime.metrics_auth import BearerAuthenticator, file_tokens, secret_tokens
from sedna.runtime.upstream import UpstreamRegistry
from sedna.runtime.workers import WorkerRuntime

PodAdjuster = Callable[[dict[str, Any], Mapping[str, Any], str], None]


def _api_client(config: GMConfig) -> ApiClient:
    return api_client_from_config(config.kubeConfig, config.master)


def _node_token_provider(
    config: GMConfig, informers: SharedInformerFactory
) -> NodeTokenProvider | None:
    """Node tokens from a watch of the token Secrets, never one GET per connection.

    A peer that dials with made-up node names then costs the API nothing, and only the
    Secrets labelled `sedna.io/lc-node` are listed and cached. A handshake that comes
    before the first list waits for it (bounded), so an LC that dials as the GM starts
    is not refused for nothing.
    """
    ws = config.websocket
    if ws.auth != "node":
        return None
    secrets = informers.informer(
        SECRETS, namespace=ws.nodeTokenNamespace, label_selector=NODE_LABEL
    )
    wait = float(ws.handshakeTimeoutSeconds)

    def get_secret(namespace: str, name: str) -> Mapping[str, Any] | None:
        if not secrets.has_synced() and not secrets.wait_for_sync(wait):
            return None
        return secrets.lister.get(namespace, name)

    return node_token_provider(get_secret, ws.nodeTokenNamespace)


def _secret_reader(kube: KubeClient) -> Callable[[str, str], Mapping[str, Any] | None]:
    """A Secret read from the API (None when it does not exist), for a token source."""

    def get_secret(namespace: str, name: str) -> Mapping[str, Any] | None:
        try:
            return kube.resource(SECRETS).get(namespace, name)
        except NotFound:
            return None

    return get_secret


def _node_addresses(config: GMConfig, kube: KubeClient) -> Callable[[str], list[str]] | None:
    if not config.websocket.nodeAddressBinding:
        return None

    def addresses(node: str) -> list[str]:
        try:
            obj = kube.resource(NODES).get(None, node)
        except NotFound:
            return []
        found = (obj.get("status") or {}).get("addresses") or []
        return [str(a.get("address")) for a in found if isinstance(a, dict)]

    return addresses


def _token_provider(config: GMConfig, kube: KubeClient) -> Callable[[], Iterable[str]] | None:
    ws = config.websocket
    if ws.auth in ("none", "node"):
        return None
    if ws.tokenFile:
        return file_token_provider(ws.tokenFile)
    if ws.tokenSecret:
        return secret_token_provider(_secret_reader(kube), ws.tokenSecret)
    raise ValueError(
        "websocket.auth is token but neither websocket.tokenFile nor websocket.tokenSecret "
        "is set (set one, or choose websocket.auth: none for Sedna's unauthenticated LCs)"
    )


def _metrics_authenticator(
    config: GMConfig, kube: KubeClient, clock: Clock
) -> BearerAuthenticator | None:
    """Who may read /metrics (None: anyone, `metrics.auth: none`); the probes stay public."""
    m = config.metrics
    if m.auth == "none":
        return None
    if m.tokenFile:
        return BearerAuthenticator(file_tokens(m.tokenFile))
    if m.tokenSecret:
        return BearerAuthenticator(
            secret_tokens(_secret_reader(kube), m.tokenSecret, now=clock.now)
        )
    raise ValueError(
        "metrics.auth is token but neither metrics.tokenFile nor metrics.tokenSecret is set "
        "(set one, or choose metrics.auth: none to serve /metrics to anyone who reaches it)"
    )


def _message_layer(
    config: GMConfig,
    metrics: Metrics,
    upstream: UpstreamRegistry,
    token_provider: Callable[[], Iterable[str]] | None,
    informers: SharedInformerFactory,
    clock: Clock,
    kube: KubeClient,
) -> MessageLayer:
    layer = MessageLayer(
        config.websocket,
        metrics=metrics,
        upstream=upstream,
        token_provider=token_provider,
        node_token_provider=_node_token_provider(config, informers),
        node_addresses=_node_addresses(config, kube),
        clock=clock,
    )
    # The layer forgets a node's queue and closes its LC when the Node is deleted. It
    # needs only the names, so its informer is metadata-only: a full Node (status,
    # images, conditions) is 10-50 KB, hundreds of MB of cache on a large cluster.
    layer.watch_nodes(informers.informer(NODES, metadata_only=True))
    return layer


def _send_of(layer: MessageLayer) -> Callable[[str, str, Mapping[str, Any]], None]:
    return layer.send


class RuntimeContainer(containers.DeclarativeContainer):
    """Providers for everything a feature controller may use.

    Singletons are built lazily: a provider that nobody asks for (e.g. the websocket
    server when `downstream` is overridden) is never built.
    """

    config = providers.Dependency(instance_of=GMConfig)
    clock = providers.Singleton(RealClock)
    metrics = providers.Singleton(Metrics)
    api_client = providers.Singleton(_api_client, config)
    kube = providers.Singleton(KubeClient, api_client, user_agent=GM_USER_AGENT)
    informers = providers.Singleton(
        SharedInformerFactory,
        kube,
        namespace=config.provided.namespace,
        min_resync_period=config.provided.minResyncPeriodSeconds,
        clock=clock,
    )
    upstream = providers.Singleton(UpstreamRegistry)
    # The LC tokens (None with auth: none); readiness reads them too.
    token_provider = providers.Singleton(_token_provider, config, kube)
    message_layer = providers.Singleton(
        _message_layer, config, metrics, upstream, token_provider, informers, clock, kube
    )
    downstream = providers.Singleton(_send_of, message_layer)
    # Who may read /metrics (None with metrics.auth: none).
    metrics_authenticator = providers.Singleton(_metrics_authenticator, config, kube, clock)
    events = providers.Singleton(EventRecorder, kube, metrics=metrics, clock=clock)
    pod_adjusters: providers.Provider[Any] = providers.Object(())
    worker_runtime = providers.Singleton(
        WorkerRuntime,
        kube,
        storage_initializer_image=config.provided.storageInitializer.image,
        credential_injection=config.provided.credentials.injection,
        pod_adjusters=pod_adjusters,
    )
