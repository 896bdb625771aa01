"""Transforms applied to objects before an informer caches them (client-go's ``SetTransform``).

A cache holds one dict per object for the GM's lifetime, so what a controller never
reads is memory spent for nothing: ``metadata.managedFields`` (often larger than the
object itself on a real cluster) and kubectl's last-applied annotation (the whole
object again). Every informer drops both by default (``strip_bookkeeping``).

``worker_pod_transform`` goes further for the pods of Sedna's workers: controllers
read a worker's metadata, where it runs and its phase, never its containers, volumes,
conditions or container statuses, which are most of a pod (Sedna's Go GM reads no
more of a pod's status than its phase either). ``WORKER_POD_SPEC_FIELDS`` and
``WORKER_POD_STATUS_FIELDS`` are the contract: a controller that starts reading
another field of a cached pod must add it here (the tests record every field the
controllers read and check it is kept).

``SubtreeSharing`` makes the specs of many alike objects cost one: each dict or list
directly under ``spec`` is looked up in a bounded table of subtrees already cached, and
an equal one found there is cached instead (hash-consing). Jobs made from one template
(hundreds of jobs, a few applications) then share their pod templates, which are most
of a job. This is safe only because cached objects are never changed (the mutation
detector's rule; a change would show in every object sharing the subtree). Short
strings of metadata and status (phases, condition types, label values) are interned.

A transform gets the decoded object, owned by the informer alone, and may change it
in place; it must return the object to cache and must be idempotent.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final

import orjson

__all__ = [
    "LAST_APPLIED_ANNOTATION",
    "WORKER_POD_SPEC_FIELDS",
    "WORKER_POD_STATUS_FIELDS",
    "SubtreeSharing",
    "Transform",
    "intern_strings",
    "strip_bookkeeping",
    "worker_pod_transform",
]

Transform = Callable[[dict[str, Any]], dict[str, Any]]

LAST_APPLIED_ANNOTATION: Final = "kubectl.kubernetes.io/last-applied-configuration"

WORKER_POD_SPEC_FIELDS: Final = frozenset({"nodeName", "restartPolicy", "nodeSelector"})
"""The ``spec`` fields of a worker pod that controllers read (where it runs, how it restarts)."""

WORKER_POD_STATUS_FIELDS: Final = frozenset(
    {"phase", "reason", "message", "startTime", "hostIP", "podIP"}
)
"""The ``status`` fields of a worker pod that controllers read or log."""


def strip_bookkeeping(obj: dict[str, Any]) -> dict[str, Any]:
    """Drop ``managedFields`` and the last-applied annotation, which no controller reads."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict) and LAST_APPLIED_ANNOTATION in annotations:
            annotations.pop(LAST_APPLIED_ANNOTATION)
            if not annotations:
                meta.pop("annotations")
    return obj


def worker_pod_transform(obj: dict[str, Any]) -> dict[str, Any]:
    """``strip_bookkeeping``, of ``spec`` and ``status`` only the fields named above,
    strings interned."""
    strip_bookkeeping(obj)
    for part, keep in (("spec", WORKER_POD_SPEC_FIELDS), ("status", WORKER_POD_STATUS_FIELDS)):
        node = obj.get(part)
        if isinstance(node, dict):
            for name in [k for k in node if k not in keep]:
                del node[name]
    intern_strings(obj)
    return obj


_INTERN_MAX = 64  # longer strings are rarely repeated (uids are 36, timestamps 20)


def intern_strings(node: Any) -> None:
    """Intern, in place, the short string values under ``node`` (dicts and lists).

    Every object an informer caches goes through here, so the walk tests exact types
    first (decoded JSON holds nothing else) and only then ``isinstance``, which is
    several times slower.
    """
    t = type(node)
    if t is dict:
        _intern_dict(node)
    elif t is list:
        _intern_list(node)
    elif isinstance(node, dict):
        _intern_dict(node)
    elif isinstance(node, list):
        _intern_list(node)


def _intern_dict(node: dict[Any, Any]) -> None:
    intern = sys.intern
    for key, value in node.items():
        t = type(value)
        if t is str:
            if len(value) <= _INTERN_MAX:
                node[key] = intern(value)
        elif t is dict:
            _intern_dict(value)
        elif t is list:
            _intern_list(value)
        elif t is not int and t is not bool and t is not float and value is not None:
            intern_strings(value)  # a subclass of str, dict or list, or something else


def _intern_list(node: list[Any]) -> None:
    intern = sys.intern
    for i, value in enumerate(node):
        t = type(value)
        if t is str:
            if len(value) <= _INTERN_MAX:
                node[i] = intern(value)
        elif t is dict:
            _intern_dict(value)
        elif t is list:
            _intern_list(value)
        elif t is not int and t is not bool and t is not float and value is not None:
            intern_strings(value)


class SubtreeSharing:
    """A transform that caches one copy of equal ``spec`` subtrees (see the module doc).

    The table keeps at most ``max_entries`` subtrees, least recently seen dropped first,
    keyed by the hash of their canonical JSON (equality is checked, so a collision only
    costs the sharing). ``inner`` runs first (``strip_bookkeeping`` by default).
    """

    def __init__(self, inner: Transform = strip_bookkeeping, max_entries: int = 2048) -> None:
        self.inner = inner
        self.max_entries = max_entries
        self._table: OrderedDict[int, Any] = OrderedDict()
        self._lock = threading.Lock()  # informers of several resources share one table
        self.hits = 0

    def __call__(self, obj: dict[str, Any]) -> dict[str, Any]:
        obj = self.inner(obj)
        spec = obj.get("spec")
        if isinstance(spec, dict):
            for key, value in spec.items():
                if isinstance(value, dict | list) and value:
                    spec[key] = self._shared(value)
        for part in ("metadata", "status"):
            intern_strings(obj.get(part))
        return obj

    def _shared(self, node: Any) -> Any:
        try:
            digest = hash(orjson.dumps(node, option=orjson.OPT_SORT_KEYS))
        except TypeError:  # not JSON (a transform before us put something else there)
            return node
        with self._lock:
            known = self._table.get(digest)
            if known is not None and known == node:
                self._table.move_to_end(digest)
                self.hits += 1
                return known
            self._table[digest] = node
            self._table.move_to_end(digest)
            if len(self._table) > self.max_entries:
                self._table.popitem(last=False)
        return node

    def __len__(self) -> int:
        return len(self._table)
