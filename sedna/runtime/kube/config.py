"""Building an ``ApiClient`` the way Sedna's GM does.

Sedna's ``kubeConfig`` and ``master`` keys follow client-go's
``clientcmd.BuildConfigFromFlags``: a kubeconfig path (``master`` overriding its
server URL), or only a master URL, or neither, meaning in-cluster config.
"""

from __future__ import annotations

import kubernetes.client
import kubernetes.config
from kubernetes.config.config_exception import ConfigException
from loguru import logger

from .client import DEFAULT_POOL_SIZE

__all__ = ["KubeConfigError", "api_client_for_url", "api_client_from_config"]


class KubeConfigError(Exception):
    """No usable cluster configuration; the message says what was tried."""


def _finish(cfg: kubernetes.client.Configuration, pool_size: int) -> kubernetes.client.ApiClient:
    cfg.connection_pool_maxsize = max(pool_size, cfg.connection_pool_maxsize or 0)
    return kubernetes.client.ApiClient(configuration=cfg)


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
        if master:
            cfg.host = master.rstrip("/")
        return _finish(cfg, pool_size)
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
