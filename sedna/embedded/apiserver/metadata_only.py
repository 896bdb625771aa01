"""Metadata-only reads: ``PartialObjectMetadata``, as kube-apiserver serves them.

client-go's metadata client (and so its metadata informers, controller-runtime's
``OnlyMetadata`` watches, the garbage collector) asks for
``application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`` on a get or a watch
and ``as=PartialObjectMetadataList`` on a list (``negotiation`` picks the range).
Each object is answered as ``{"apiVersion": "meta.k8s.io/<v>", "kind":
"PartialObjectMetadata", "metadata": <its whole metadata>}``; a list keeps its own
metadata (resourceVersion, continue, remainingItemCount) and its items become
PartialObjectMetadata; watch events carry PartialObjectMetadata objects, bookmarks
included (a bookmark's object holds only ``metadata.resourceVersion``), and ERROR
events their Status, as kube's watch encoder sends them.

As in kube's ``asPartialObjectMetadata``/``asPartialObjectMetadataList``, asking for the
single-object form of a list (or the list form of one object) is 406 NotAcceptable.
kube lets a watch with ``as=PartialObjectMetadataList`` through and then sends full
objects (each event's conversion fails and is only logged); this server answers 406
at once instead, so the client learns of its mistake rather than caching full objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from .negotiation import PARTIAL, PARTIAL_LIST, Target, not_acceptable
from .resources import ResourceType


def _go_type(rt: ResourceType, is_list: bool) -> str:
    """What kube's ``%T`` prints for the object in its 406 messages."""
    if rt.custom:
        return "*unstructured.UnstructuredList" if is_list else "*unstructured.Unstructured"
    return f"*{rt.version}.{rt.kind}{'List' if is_list else ''}"


def check(target: Target, verb: str, rt: ResourceType) -> None:
    """406 when the requested form does not fit the verb (a list is not one object)."""
    if target.kind == PARTIAL and verb == "list":
        raise not_acceptable(
            f"you requested {PARTIAL}, but the requested object is a list ({_go_type(rt, True)})"
        )
    if target.kind == PARTIAL_LIST and verb in ("get", "watch"):
        raise not_acceptable(
            f"you requested {PARTIAL_LIST}, but the requested object is not a list "
            f"({_go_type(rt, False)})"
        )


def partial(obj: Mapping[str, Any], version: str = "v1") -> dict[str, Any]:
    """One object as PartialObjectMetadata: its whole metadata and nothing else."""
    meta = obj.get("metadata")
    return {
        "kind": PARTIAL,
        "apiVersion": f"meta.k8s.io/{version}",
        "metadata": meta if isinstance(meta, Mapping) else {},
    }


def partial_list(result: Mapping[str, Any], version: str = "v1") -> dict[str, Any]:
    """A LIST result as PartialObjectMetadataList, keeping the list's own metadata."""
    meta = result.get("metadata")
    items = result.get("items")
    return {
        "kind": PARTIAL_LIST,
        "apiVersion": f"meta.k8s.io/{version}",
        "metadata": dict(meta) if isinstance(meta, Mapping) else {},
        "items": [partial(o, version) for o in items] if isinstance(items, list) else [],
    }


def convert(target: Target, result: Mapping[str, Any]) -> dict[str, Any]:
    """The response body of a get (``PARTIAL``) or list (``PARTIAL_LIST``)."""
    if target.kind == PARTIAL_LIST:
        return partial_list(result, target.version)
    return partial(result, target.version)


def event_line(typ: str, obj: Mapping[str, Any], version: str) -> bytes:
    """One watch event carrying the object's metadata only."""
    return orjson.dumps({"type": typ, "object": partial(obj, version)}) + b"\n"


def bookmark_line(rv: int, version: str) -> bytes:
    """A BOOKMARK event of a metadata-only watch (kube converts bookmarks as well)."""
    obj = partial({"metadata": {"resourceVersion": str(rv)}}, version)
    return orjson.dumps({"type": "BOOKMARK", "object": obj}) + b"\n"
