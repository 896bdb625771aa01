"""Status writes that survive concurrent writers.

The GM and the LC-driven upstream handlers both write job status; a PUT with a
stale resourceVersion gets 409. Like client-go's ``retry.RetryOnConflict`` we
re-read and re-apply the change instead of failing the reconcile.

A controller that decided from its informer cache may pass that object as
``current``: the first PUT then carries the cached resourceVersion and needs no
GET (one request instead of two, as client-go controllers write from a lister
copy). The server's compare-and-swap still guards the write; only a 409 costs the
re-read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from loguru import logger

from .client import ResourceClient
from .errors import Conflict
from .jsoncopy import json_deepcopy

__all__ = ["update_status_with_retry", "update_with_retry"]


def update_status_with_retry(
    client: ResourceClient,
    namespace: str,
    name: str,
    mutate: Callable[[dict[str, Any]], bool],
    attempts: int = 5,
    *,
    current: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """GET fresh, ``mutate`` it in place, PUT ``/status``; retry on 409 up to ``attempts``.

    ``mutate`` returns False when there is nothing to write; the fresh object is
    then returned without a PUT. A conflict after the last attempt is re-raised.

    With ``current`` (e.g. the informer's cached object, which is never changed:
    ``mutate`` gets a deep copy) the first attempt skips the GET and writes with
    its resourceVersion; a 409 falls back to GET and retry. A False from
    ``mutate`` on ``current`` is trusted: a newer version reaches the caller's
    informer and triggers another sync, so the copy is returned without a GET.
    """
    return _retry(client, namespace, name, mutate, attempts, status=True, current=current)


def update_with_retry(
    client: ResourceClient,
    namespace: str,
    name: str,
    mutate: Callable[[dict[str, Any]], bool],
    attempts: int = 5,
    *,
    current: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Same as ``update_status_with_retry`` for the main resource (labels, spec)."""
    return _retry(client, namespace, name, mutate, attempts, status=False, current=current)


def _retry(
    client: ResourceClient,
    namespace: str,
    name: str,
    mutate: Callable[[dict[str, Any]], bool],
    attempts: int,
    *,
    status: bool,
    current: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    what = f"{client.res.group_resource} {namespace}/{name}"
    for attempt in range(1, attempts + 1):
        if attempt == 1 and current is not None:
            obj = json_deepcopy(current)  # mutate may change nested parts; current is shared
        else:
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
