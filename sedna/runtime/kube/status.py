"""Status writes that survive concurrent writers.

The GM and the LC-driven upstream handlers both write job status; a PUT with a
stale resourceVersion gets 409. Like client-go's ``retry.RetryOnConflict`` we
re-read and re-apply the change instead of failing the reconcile.

A controller that decided from its informer cache may pass that object as
``current``: the first PUT then carries the cached resourceVersion and needs no
GET (one request instead of two, as client-go controllers write from a lister
copy). The server's compare-and-swap still guards the write; only a 409 costs the
re-read.

While an accepted LC report is being applied (`sedna.runtime.upstream.in_report()`),
transient errors (5xx, 429, no answer) are retried too, with backoff, until the write
lands or the object is gone: Sedna's GM and ours used to drop the report. A write
whose answer was lost may have landed; before writing again the fresh object is
compared with what was sent, and a write that landed is not made twice (a report is
recorded exactly once).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from loguru import logger

from sedna.runtime.upstream import in_report, report_sleep

from .client import ResourceClient
from .errors import ApiError, Conflict, ServerError, TooManyRequests, TransportError
from .jsoncopy import json_deepcopy

__all__ = ["is_transient", "update_status_with_retry", "update_with_retry"]

REPORT_BACKOFF_INITIAL = 0.2
REPORT_BACKOFF_MAX = 10.0


def is_transient(exc: BaseException) -> bool:
    """An error worth retrying: the server was busy or failing, or no answer came."""
    return isinstance(exc, ServerError | TooManyRequests | TransportError)


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
    patient = in_report()
    delay = REPORT_BACKOFF_INITIAL
    # (before, sent) of each write whose answer never came: any of them may have landed
    unconfirmed: list[tuple[Any, Any]] = []
    attempt = 0
    while True:
        attempt += 1
        try:
            if attempt == 1 and current is not None:
                obj = json_deepcopy(current)  # mutate may change nested parts; current is shared
            else:
                obj = client.get(namespace, name)
                fresh = _part(obj, status) if unconfirmed else None
                if any(_landed(fresh, before, sent) for before, sent in unconfirmed):
                    logger.debug("{}: the write whose answer was lost had landed", what)
                    return obj
            before = _part(obj, status)
            if not mutate(obj):
                return obj
            try:
                if status:
                    return client.replace_status(namespace, name, obj)
                return client.replace(namespace, name, obj)
            except ApiError as exc:
                if is_transient(exc):
                    unconfirmed.append((before, _part(obj, status)))
                raise
        except Conflict as exc:
            if attempt >= (attempts * 10 if patient else attempts):
                logger.warning("{}: giving up after {} conflicts: {}", what, attempts, exc)
                raise
            logger.debug("{}: conflict on attempt {}, retrying", what, attempt)
        except ApiError as exc:
            if not (patient and is_transient(exc)):
                raise
            logger.info(
                "{}: {} while applying an LC report; retrying in {:.1f} s", what, exc, delay
            )
            if not report_sleep(delay):
                raise
            delay = min(delay * 2, REPORT_BACKOFF_MAX)


def _part(obj: Mapping[str, Any], status: bool) -> Any:
    if status:
        return copy.deepcopy(obj.get("status"))
    return copy.deepcopy({k: v for k, v in obj.items() if k not in ("status", "metadata")})


def _landed(fresh: Any, before: Any, sent: Any) -> bool:
    """Whether fresh shows the change from before to sent, though others wrote since.

    A list that grew (conditions appended) landed when every added item is in fresh's
    list, wherever others' items went; any other changed value must be equal.
    """
    if not (isinstance(sent, dict) and isinstance(fresh, dict)):
        return bool(fresh == sent)
    old = before if isinstance(before, dict) else {}
    changed = False
    for key, value in sent.items():
        was = old.get(key)
        if value == was:
            continue
        changed = True
        now = fresh.get(key)
        if isinstance(value, list) and isinstance(was, list | None):
            added = [item for item in value if item not in (was or [])]
            if not isinstance(now, list) or any(item not in now for item in added):
                return False
        elif now != value:
            return False
    return changed
