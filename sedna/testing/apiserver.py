"""A running in-process Kubernetes API server with Sedna's CRDs, and clients for it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import kubernetes

from sedna.embedded.apiserver import APIServer
from sedna.embedded.crds import crd_manifests


def start_apiserver(crds: Iterable[Mapping[str, Any]] | None = None) -> APIServer:
    """Start a server on 127.0.0.1 (an OS-chosen port) with Sedna's eleven CRDs installed.

    `crds` adds CRDs of your own (apiextensions.k8s.io/v1 manifests), e.g. for a plugin
    that reconciles a kind that is not Sedna's. Stop it with `.stop()`.
    """
    server = APIServer("127.0.0.1", 0)
    server.start()
    try:
        for crd in [*crd_manifests(), *(crds or ())]:
            server.install_crd(crd)
    except BaseException:
        server.stop()
        raise
    return server


def api_client_for(server: Any) -> kubernetes.client.ApiClient:
    """An official `kubernetes` client for the server (anything with a `.url`).

    A server that authenticates its clients gives its own client configuration and
    token; the token also goes into a default header, so the runtime's raw requests
    (which skip the client's auth settings) carry it too.
    """
    make = getattr(server, "client_configuration", None)
    if callable(make):
        cfg = make()
    else:
        cfg = kubernetes.client.Configuration()
        cfg.host = server.url
    client = kubernetes.client.ApiClient(cfg)
    token = getattr(server, "token", None)
    if isinstance(token, str) and token:
        client.set_default_header("Authorization", f"Bearer {token}")  # type: ignore[no-untyped-call]
    return client
