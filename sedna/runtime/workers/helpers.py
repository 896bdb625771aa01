"""Small helpers Sedna's ``runtime`` package gives feature controllers (``common.go``)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any, Protocol

__all__ = [
    "DEFAULT_BACKOFF",
    "MAX_BACKOFF",
    "active_deployment_count",
    "active_pod_count",
    "backoff_for",
    "backoff_for_requeues",
    "convert_map_to_metrics",
    "go_json",
    "node_ip",
]

DEFAULT_BACKOFF = 10.0
MAX_BACKOFF = 360.0


_GO_ESCAPES = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


class _Requeues(Protocol):
    def num_requeues(self, item: Any) -> int: ...


def node_ip(node: Mapping[str, Any]) -> str | None:
    """ExternalIP, else InternalIP, of a Node object; None when it has neither.

    Go keeps the last address of each type; we take the first, which is the
    primary one when a node reports several.
    """
    by_type: dict[str, str] = {}
    for addr in (node.get("status") or {}).get("addresses") or []:
        by_type.setdefault(str(addr.get("type")), str(addr.get("address")))
    return by_type.get("ExternalIP") or by_type.get("InternalIP")


def active_pod_count(pods: Iterable[Mapping[str, Any]]) -> int:
    """Pods neither finished (Succeeded/Failed) nor being deleted."""
    n = 0
    for p in pods:
        phase = (p.get("status") or {}).get("phase")
        if phase not in ("Succeeded", "Failed") and not (p.get("metadata") or {}).get(
            "deletionTimestamp"
        ):
            n += 1
    return n


def active_deployment_count(deployments: Iterable[Mapping[str, Any]]) -> int:
    """Deployments whose latest condition is ``Progressing`` and not being deleted.

    Go carries the previous deployment's condition over to one without
    conditions (the variable lives outside the loop); we do not.
    """
    n = 0
    for d in deployments:
        conditions = (d.get("status") or {}).get("conditions") or []
        latest = conditions[-1].get("type") if conditions else None
        if latest == "Progressing" and not (d.get("metadata") or {}).get("deletionTimestamp"):
            n += 1
    return n


def _go_float(x: float) -> str:
    if math.isnan(x) or math.isinf(x):
        raise ValueError(f"unsupported value {x!r}")
    if x == 0:
        return "0"
    if 1e-6 <= abs(x) < 1e21:
        text = format(Decimal(repr(x)), "f")
        return text[:-2] if text.endswith(".0") else text
    mantissa, _, exp = repr(x).partition("e")
    sign = exp[0] if exp[0] in "+-" else "+"
    digits = exp.lstrip("+-")
    return f"{mantissa}e{sign}{digits.zfill(2)}"


def go_json(value: Any) -> str:
    """``json.Marshal`` output: compact, keys sorted, HTML-escaped, Go's float format."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, str):
        s = json.dumps(value, ensure_ascii=False)
        for ch, esc in _GO_ESCAPES:
            s = s.replace(ch, esc)
        return s
    if isinstance(value, Mapping):
        items = sorted((str(k), v) for k, v in value.items())
        return "{" + ",".join(f"{go_json(k)}:{go_json(v)}" for k, v in items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(go_json(v) for v in value) + "]"
    raise TypeError(f"cannot marshal {type(value).__name__}")


def convert_map_to_metrics(metric: Mapping[str, Any]) -> list[dict[str, str]]:
    """Sedna's ``ConvertMapToMetrics``: strings as they are, anything else as Go's JSON.

    Values are ``{"key", "value"}`` dicts as in the CRDs' status metrics; the
    order is the mapping's (Go's is random).
    """
    out = []
    for k, v in metric.items():
        out.append({"key": str(k), "value": v if isinstance(v, str) else go_json(v)})
    return out


def backoff_for_requeues(requeues: int) -> float:
    """Seconds to wait: 0 before the first retry, then 10 s doubling up to 360 s."""
    if requeues <= 0:
        return 0.0
    if requeues > 64:
        return MAX_BACKOFF
    return min(DEFAULT_BACKOFF * 2.0 ** (requeues - 1), MAX_BACKOFF)


def backoff_for(queue: _Requeues, key: Any) -> float:
    """Sedna's ``GetBackoff``: the backoff for ``key`` from its requeue count in ``queue``."""
    return backoff_for_requeues(queue.num_requeues(key))
