"""Which LC hears of a Dataset, and in what form (Sedna's `syncToEdge`).

Pure planning: given the informer's old/new objects it returns the messages to send;
the controller looks up credentials and sends. A Dataset lives on exactly one node,
`spec.nodeName`, so an edit of that field is a move: a delete to the old node and an
insert to the new one (Sedna only inserts to the new node, and the old LC keeps
monitoring a dataset that is no longer its own).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KIND = "Dataset"
API_VERSION = "sedna.io/v1alpha1"
INSERT = "insert"
DELETE = "delete"

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class EdgeMessage:
    """One send: `obj` shares nested parts with the informer cache, so it is never changed."""

    node: str
    operation: str
    obj: dict[str, Any]


def _str_at(obj: Obj | None, *path: str) -> str:
    cur: Any = obj
    for p in path:
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(p)
    return cur if isinstance(cur, str) else ""


def node_of(obj: Obj | None) -> str:
    return _str_at(obj, "spec", "nodeName")


def credential_of(obj: Obj | None) -> str:
    return _str_at(obj, "spec", "credentialName")


def outgoing(obj: Obj) -> dict[str, Any]:
    """The Dataset as sent: kind and apiVersion set (list responses carry neither).

    A shallow copy: the message layer encodes at once, and only the top level (and,
    with credentials, a copied metadata) differs from the cached object.
    """
    out = dict(obj)
    out["kind"] = KIND
    out.setdefault("apiVersion", API_VERSION)
    return out


def _labels_and_annotations(obj: Obj) -> tuple[Any, Any]:
    meta = obj.get("metadata") or {}
    return meta.get("labels"), meta.get("annotations")


def edge_relevant_change(old: Obj, new: Obj) -> bool:
    """False only for a write the LC would not notice: status (our own) or bookkeeping.

    A periodic resync (same resourceVersion) counts as relevant: re-sending then is how
    Sedna keeps LCs eventually consistent, and it costs one message per interval. A
    status-only write is skipped: each LC report would otherwise echo back as an insert.
    """
    old_rv = _str_at(old, "metadata", "resourceVersion")
    new_rv = _str_at(new, "metadata", "resourceVersion")
    if old_rv == new_rv:
        return True
    return old.get("spec") != new.get("spec") or _labels_and_annotations(
        old
    ) != _labels_and_annotations(new)


def plan_upsert(old: Obj | None, new: Obj) -> list[EdgeMessage]:
    """Messages for an add (`old` None) or update: a delete to a node left, an insert.

    The insert carries no credential yet (the controller adds it); a delete never does,
    since the LC only reads its header.
    """
    out: list[EdgeMessage] = []
    new_node = node_of(new)
    old_node = node_of(old) if old is not None else ""
    if old is not None and old_node and old_node != new_node:
        out.append(EdgeMessage(old_node, DELETE, outgoing(old)))
    if new_node:
        out.append(EdgeMessage(new_node, INSERT, outgoing(new)))
    return out


def plan_delete(obj: Obj) -> list[EdgeMessage]:
    node = node_of(obj)
    return [EdgeMessage(node, DELETE, outgoing(obj))] if node else []
