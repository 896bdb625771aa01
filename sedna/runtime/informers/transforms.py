"""Transforms applied to objects before an informer caches them (client-go's ``SetTransform``).

A cache holds one dict per object for the GM's lifetime, so what a controller never
reads is memory spent for nothing: ``metadata.managedFields`` (often larger than the
object itself on a real cluster) and kubectl's last-applied annotation (the whole
object again). Every informer drops both by default (``strip_bookkeeping``).

``worker_pod_transform`` goes further for the pods of Sedna's workers: controllers
read a worker's metadata, where it runs and its status, never its containers or
volumes, which are most of a pod. ``WORKER_POD_SPEC_FIELDS`` is the contract: a
controller that starts reading another ``spec`` field of a cached pod must add it
here (the tests record every field the controllers read and check it is kept).

A transform gets the decoded object, owned by the informer alone, and may change it
in place; it must return the object to cache and must be idempotent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

__all__ = [
    "LAST_APPLIED_ANNOTATION",
    "WORKER_POD_SPEC_FIELDS",
    "Transform",
    "strip_bookkeeping",
    "worker_pod_transform",
]

Transform = Callable[[dict[str, Any]], dict[str, Any]]

LAST_APPLIED_ANNOTATION: Final = "kubectl.kubernetes.io/last-applied-configuration"

WORKER_POD_SPEC_FIELDS: Final = frozenset({"nodeName", "restartPolicy", "nodeSelector"})
"""The ``spec`` fields of a worker pod that controllers read (where it runs, how it restarts)."""


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
    """``strip_bookkeeping``, and of ``spec`` only ``WORKER_POD_SPEC_FIELDS``."""
    strip_bookkeeping(obj)
    spec = obj.get("spec")
    if isinstance(spec, dict):
        for name in [k for k in spec if k not in WORKER_POD_SPEC_FIELDS]:
            del spec[name]
    return obj
