"""Checks of the spec parts every owned-workload kind shares (pod templates, HPAs).

The CRDs' schemas are not enforced by every API server (and Sedna's leave templates
open), so a wrong type would otherwise surface as a crash deep in a reconcile. Each
check raises `SpecError` naming the field, e.g. ``spec.edgeWorker.hpa.maxReplicas``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sedna.runtime.workloads.wants import SpecError

__all__ = ["parse_hpa", "parse_template", "require_mapping", "require_str"]


def require_mapping(value: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        what = "missing" if value is None else f"expected an object, got {type(value).__name__}"
        raise SpecError(field, what)
    return value


def require_str(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value:
        what = "missing" if value in (None, "") else f"expected a string, got {value!r}"
        raise SpecError(field, what)
    return value


def parse_template(value: Any, field: str) -> Mapping[str, Any]:
    """A PodTemplateSpec with at least one container, each an object with an image."""
    template = require_mapping(value, field)
    spec = require_mapping(template.get("spec"), f"{field}.spec")
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        raise SpecError(f"{field}.spec.containers", "at least one container is required")
    for i, c in enumerate(containers):
        c = require_mapping(c, f"{field}.spec.containers[{i}]")
        require_str(c.get("image"), f"{field}.spec.containers[{i}].image")
    meta = template.get("metadata")
    if meta is not None:
        require_mapping(meta, f"{field}.metadata")
    node = spec.get("nodeName")
    if node is not None and not isinstance(node, str):
        raise SpecError(f"{field}.spec.nodeName", f"expected a string, got {node!r}")
    return template


def _int(value: Any, field: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(field, f"expected an integer, got {value!r}")
    if value < minimum:
        raise SpecError(field, f"must be at least {minimum}, got {value}")
    return value


def parse_hpa(value: Any, field: str) -> Mapping[str, Any] | None:
    """Sedna's ``HPA`` (maxReplicas, minReplicas, metrics, behavior), or None when unset."""
    if value is None:
        return None
    hpa = require_mapping(value, field)
    if "maxReplicas" not in hpa:
        raise SpecError(f"{field}.maxReplicas", "missing")
    max_r = _int(hpa.get("maxReplicas"), f"{field}.maxReplicas", 1)
    if hpa.get("minReplicas") is not None:
        min_r = _int(hpa.get("minReplicas"), f"{field}.minReplicas", 1)
        if max_r < min_r:
            raise SpecError(
                f"{field}.maxReplicas", f"must not be below minReplicas ({max_r} < {min_r})"
            )
    metrics = hpa.get("metrics")
    if metrics is not None:
        if not isinstance(metrics, list):
            raise SpecError(f"{field}.metrics", "expected a list")
        for i, m in enumerate(metrics):
            m = require_mapping(m, f"{field}.metrics[{i}]")
            require_str(m.get("type"), f"{field}.metrics[{i}].type")
    if hpa.get("behavior") is not None:
        require_mapping(hpa.get("behavior"), f"{field}.behavior")
    return hpa
