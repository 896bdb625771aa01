"""Metadata-only reads: ``PartialObjectMetadata``, as client-go's metadata client asks.

With ``metadata_only=True`` a ``ResourceClient`` get, list or watch sends the Accept
header of client-go's ``metadata`` package, and kube-apiserver (1.15 and later)
answers each object as ``{"apiVersion": "meta.k8s.io/v1", "kind":
"PartialObjectMetadata", "metadata": {...}}``: the whole metadata (name, namespace,
uid, resourceVersion, labels, annotations, ownerReferences, finalizers, timestamps)
and nothing else. A Node's status, images and conditions (often 10-50 KB) never
cross the wire nor sit in an informer's cache.

Plain JSON is offered as the last fallback; a server that ignores the conversion
then sends full objects, and ``as_partial``/``as_partial_list`` reduce them here, so
callers always get metadata-only objects of the same shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "LIST_ACCEPT",
    "METADATA_API_VERSION",
    "OBJECT_ACCEPT",
    "PARTIAL_OBJECT_METADATA",
    "PARTIAL_OBJECT_METADATA_LIST",
    "as_partial",
    "as_partial_event",
    "as_partial_list",
    "metadata_accept",
]

METADATA_API_VERSION = "meta.k8s.io/v1"
PARTIAL_OBJECT_METADATA = "PartialObjectMetadata"
PARTIAL_OBJECT_METADATA_LIST = "PartialObjectMetadataList"


def metadata_accept(kind: str) -> str:
    """The Accept header asking for ``kind`` (the object or the list form), JSON last."""
    return f"application/json;as={kind};g=meta.k8s.io;v=v1,application/json"


OBJECT_ACCEPT = metadata_accept(PARTIAL_OBJECT_METADATA)
LIST_ACCEPT = metadata_accept(PARTIAL_OBJECT_METADATA_LIST)


def _is_meta(obj: Mapping[str, Any], kind: str) -> bool:
    api_version = obj.get("apiVersion")
    return (
        obj.get("kind") == kind
        and isinstance(api_version, str)
        and api_version.startswith("meta.k8s.io/")
    )


def as_partial(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as PartialObjectMetadata (itself when the server already converted it)."""
    if _is_meta(obj, PARTIAL_OBJECT_METADATA):
        return obj
    meta = obj.get("metadata")
    return {
        "apiVersion": METADATA_API_VERSION,
        "kind": PARTIAL_OBJECT_METADATA,
        "metadata": meta if isinstance(meta, dict) else {},
    }


def as_partial_list(result: dict[str, Any]) -> dict[str, Any]:
    """A LIST result as PartialObjectMetadataList, keeping the list's metadata."""
    if _is_meta(result, PARTIAL_OBJECT_METADATA_LIST):
        return result
    items = result.get("items")
    meta = result.get("metadata")
    return {
        "apiVersion": METADATA_API_VERSION,
        "kind": PARTIAL_OBJECT_METADATA_LIST,
        "metadata": meta if isinstance(meta, dict) else {},
        "items": [as_partial(o) if isinstance(o, dict) else o for o in items]
        if isinstance(items, list)
        else [],
    }


def as_partial_event(event: dict[str, Any]) -> dict[str, Any]:
    """A watch event whose object is PartialObjectMetadata (ERROR events keep their Status)."""
    obj = event.get("object")
    if event.get("type") == "ERROR" or not isinstance(obj, dict):
        return event
    if not _is_meta(obj, PARTIAL_OBJECT_METADATA):
        event["object"] = as_partial(obj)
    return event
