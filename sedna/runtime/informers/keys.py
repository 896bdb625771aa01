"""Cache keys and the tombstone for deletes an informer did not see.

Keys are client-go's ``MetaNamespaceKeyFunc`` strings (``namespace/name``, or
``name`` for cluster-scoped objects) so that workqueue keys, log lines and Go
tooling all agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["DeletedFinalStateUnknown", "meta_namespace_key", "split_key"]


@dataclass(frozen=True)
class DeletedFinalStateUnknown:
    """An object deleted while the watch was down: ``obj`` is its last known state.

    Delivered to ``on_delete`` after a relist finds an object gone; the final
    state may be stale, so handlers needing the real last spec must not trust it.
    """

    key: str
    obj: Mapping[str, Any]


def meta_namespace_key(obj: Mapping[str, Any] | DeletedFinalStateUnknown) -> str:
    """Return ``namespace/name`` (or ``name``); raise ``ValueError`` without a name."""
    if type(obj) is dict:  # decoded JSON: every object an informer caches, no ABC checks
        meta = obj.get("metadata")
        if type(meta) is dict:
            name = meta.get("name")
            if type(name) is str and name:
                namespace = meta.get("namespace")
                if type(namespace) is str and namespace:
                    return f"{namespace}/{name}"
                return name
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    if not isinstance(meta, Mapping):
        raise ValueError("object has no metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("object has no metadata.name")
    namespace = meta.get("namespace")
    if isinstance(namespace, str) and namespace:
        return f"{namespace}/{name}"
    return name


def split_key(key: str) -> tuple[str, str]:
    """Split a key into ``(namespace, name)``; ``namespace`` is "" for cluster scope."""
    parts = key.split("/")
    if len(parts) == 1 and parts[0]:
        return "", parts[0]
    if len(parts) == 2 and parts[0] and parts[1]:
        return parts[0], parts[1]
    raise ValueError(f"unexpected key format: {key!r}")
