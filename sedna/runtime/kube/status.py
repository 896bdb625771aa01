"""Status writes that survive concurrent writers.

The GM and the LC-driven upstream handlers both write job status; a PUT with a
stale resourceVersion gets 409. Like client-go's ``retry.RetryOnConflict`` we
re-read and re-apply the change instead of failing the reconcile.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loguru import logger

from .client import ResourceClient
from .errors import Conflict

__all__ = ["update_status_with_retry", "update_with_retry"]


def update_status_with_retry(
    client: ResourceClient,
    namespace: str,
    name: str,
    mutate: Callable[[dict[str, Any]], bool],
    attempts: int = 5,
) -> dict[str, Any]:
    """GET fresh, ``mutate`` it in place, PUT ``/status``; retry on 409 up to ``attempts``.

    ``mutate`` returns False when there is nothing to write; the fresh object is
    then returned without a PUT. A conflict after the last attempt is re-raised.
    """
    return _retry(client, namespace, name, mutate, attempts, status=True)


def update_with_retry(
    client: ResourceClient,
    namespace: str,
    name: str,
    mutate: Callable[[dict[str, Any]], bool],
    attempts: int = 5,
) -> dict[str, Any]:
    """Same as ``update_status_with_retry`` for the main resource (labels, spec)."""
    return _retry(client, namespace, name, mutate, attempts, status=False)


def _retry(
    client: ResourceClient,
    namespace: str,
    name: str,
    mutate: Callable[[dict[str, Any]], bool],
    attempts: int,
    *,
    status: bool,
) -> dict[str, Any]:
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    what = f"{client.res.group_resource} {namespace}/{name}"
    for attempt in range(1, attempts + 1):
        obj = client.get(namespace, name)
        if not mutate(obj):
            return obj
        try:
            if status:
                return client.replace_status(namespace, name, obj)
            return client.replace(namespace, name, obj)
        except Conflict as exc:
            if attempt == attempts:
                logger.warning("{}: giving up after {} conflicts: {}", what, attempts, exc)
                raise
            logger.debug("{}: conflict on attempt {}, retrying", what, attempt)
    raise AssertionError("unreachable")  # pragma: no cover
