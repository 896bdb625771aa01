"""Building an ``ApiClient`` the way Sedna's GM does.

Sedna's ``kubeConfig`` and ``master`` keys follow client-go's
``clientcmd.BuildConfigFromFlags``: a kubeconfig path (``master`` overriding its
server URL), or only a master URL, or neither, meaning in-cluster config.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import kubernetes.client
import kubernetes.config
from kubernetes.config.config_exception import ConfigException
from loguru import logger

from .client import DEFAULT_POOL_SIZE

__all__ = ["KubeConfigError", "api_client_for_url", "api_client_from_config"]


class KubeConfigError(Exception):
    """No usable cluster configuration; the message says what was tried."""


# How often a loader's credential hook runs at most (tokens expire in minutes; the
# kubeconfig loader treats a token as expired five minutes early).
REFRESH_INTERVAL_SECONDS = 1.0


def _finish(
    cfg: kubernetes.client.Configuration, pool_size: int, *, host: str | None = None
) -> kubernetes.client.ApiClient:
    """The client; `host` (Sedna's `master`) replaces the kubeconfig's server for good."""
    cfg.connection_pool_maxsize = max(pool_size, cfg.connection_pool_maxsize or 0)
    if host is not None:
        cfg.host = host
    hook = cfg.refresh_api_key_hook
    if hook is not None:
        cfg.refresh_api_key_hook = _AtMostEvery(REFRESH_INTERVAL_SECONDS, hook)
    return kubernetes.client.ApiClient(configuration=cfg)


class _AtMostEvery:
    """A credential hook run at most once per `seconds`, whichever thread asks.

    The client runs the hook before every request. The kubeconfig loader's hook then
    sets the whole configuration again (host, TLS files, proxy: the host setter reads
    the environment's proxies), about a tenth of the GM's CPU per write; and it set the
    kubeconfig's server again, so a `master` given beside the kubeconfig was lost at
    the first request. Here the hook runs on a configuration of its own, and only the
    credentials it yields are copied. The token only changes on expiry, which the
    loader checks minutes ahead.
    """

    def __init__(self, seconds: float, hook: Callable[[Any], None]) -> None:
        self.seconds = seconds
        self.hook = hook
        self._scratch = kubernetes.client.Configuration()
        self._lock = threading.Lock()
        self._due = 0.0

    def __call__(self, cfg: Any) -> None:
        if time.monotonic() < self._due or not self._lock.acquire(blocking=False):
            return  # fresh, or another thread refreshes right now
        try:
            self.hook(self._scratch)
            self.hook = self._scratch.refresh_api_key_hook or self.hook  # it sets itself again
            cfg.api_key.update(self._scratch.api_key)
            self._due = time.monotonic() + self.seconds
        finally:
            self._lock.release()


def api_client_from_config(
    kube_config: str, master: str, *, pool_size: int = DEFAULT_POOL_SIZE
) -> kubernetes.client.ApiClient:
    """Return an ``ApiClient`` for Sedna's ``kubeConfig``/``master`` settings.

    Both empty: in-cluster service account; outside a cluster fall back to the
    default kubeconfig ($KUBECONFIG, ~/.kube/config), as client-go does with a
    warning. The pool is sized for informers plus worker threads.
    """
    cfg = kubernetes.client.Configuration()
    if kube_config:
        try:
            kubernetes.config.load_kube_config(config_file=kube_config, client_configuration=cfg)  # type: ignore[no-untyped-call]
        except (ConfigException, OSError) as exc:
            raise KubeConfigError(f"kubeConfig {kube_config!r}: {exc}") from exc
        return _finish(cfg, pool_size, host=master.rstrip("/") if master else None)
    if master:
        return api_client_for_url(master, pool_size=pool_size)
    try:
        kubernetes.config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        return _finish(cfg, pool_size)
    except ConfigException as in_cluster_exc:
        logger.warning(
            "neither kubeConfig nor master set and not in a cluster ({}); "
            "trying the default kubeconfig",
            in_cluster_exc,
        )
        try:
            kubernetes.config.load_kube_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        except (ConfigException, OSError) as exc:
            raise KubeConfigError(
                f"no kubeConfig or master configured, in-cluster config failed "
                f"({in_cluster_exc}) and the default kubeconfig failed ({exc})"
            ) from exc
        return _finish(cfg, pool_size)


def api_client_for_url(
    url: str,
    *,
    token: str | None = None,
    verify_ssl: bool = True,
    ca_cert: str | None = None,
    pool_size: int = DEFAULT_POOL_SIZE,
) -> kubernetes.client.ApiClient:
    """Return an ``ApiClient`` for a plain server URL (embedded server, tests, proxies)."""
    if not url.startswith(("http://", "https://")):
        raise KubeConfigError(f"master {url!r} is not an http(s) URL")
    cfg = kubernetes.client.Configuration()
    cfg.host = url.rstrip("/")
    cfg.verify_ssl = verify_ssl
    if ca_cert:
        cfg.ssl_ca_cert = ca_cert
    if token:
        cfg.api_key = {"authorization": token}
        cfg.api_key_prefix = {"authorization": "Bearer"}
    return _finish(cfg, pool_size)
