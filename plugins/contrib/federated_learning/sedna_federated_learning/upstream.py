"""An LC's FL report, checked: the round the workers reached and the aggregated model's metrics.

The payload is what Sedna's LC federated-learning manager writes (`UpstreamMessage`):
`{"phase", "status", "output": {"models": [{..., "metrics": {...}}],
"ownerInfo": {"currentRound": N, "updateTime": "..."}}}`. Sedna unmarshals it into a
struct and silently drops what does not fit; here a field of the wrong type rejects
the report with its path named, and nothing else is touched.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_METRICS = 100
MAX_TEXT = 256


class ReportError(ValueError):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


@dataclass(frozen=True)
class Report:
    current_round: int  # 0: the report carries no round
    update_time: str
    metrics: dict[str, Any] | None  # of the first model, as Sedna takes it


def _object(value: Any, field: str) -> Mapping[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ReportError(field, "must be an object")
    return value


def parse_report(content: Any) -> Report:
    """The report's round and metrics; `ReportError` names the first bad field."""
    doc = _object(content, "content")
    if doc is None:
        raise ReportError("content", "must be an object")
    for key in ("phase", "status"):
        if doc.get(key) is not None and not isinstance(doc.get(key), str):
            raise ReportError(key, "must be a string")
    output = _object(doc.get("output"), "output")
    if output is None:
        return Report(0, "", None)
    metrics: dict[str, Any] | None = None
    models = output.get("models")
    if models is not None:
        if not isinstance(models, list):
            raise ReportError("output.models", "must be a list")
        if models:
            first = _object(models[0], "output.models[0]")
            raw = _object((first or {}).get("metrics"), "output.models[0].metrics")
            if raw:
                if len(raw) > MAX_METRICS:
                    raise ReportError("output.models[0].metrics", f"more than {MAX_METRICS}")
                metrics = {str(k): v for k, v in raw.items()}
    info = _object(output.get("ownerInfo"), "output.ownerInfo")
    current_round, update_time = 0, ""
    if info is not None:
        raw_round = info.get("currentRound", 0)
        if isinstance(raw_round, bool) or not isinstance(raw_round, int) or raw_round < 0:
            raise ReportError("output.ownerInfo.currentRound", "must be an integer >= 0")
        current_round = int(raw_round)
        raw_time = info.get("updateTime", "")
        if not isinstance(raw_time, str):
            raise ReportError("output.ownerInfo.updateTime", "must be a string")
        if len(raw_time) > MAX_TEXT:
            raise ReportError("output.ownerInfo.updateTime", f"longer than {MAX_TEXT}")
        update_time = raw_time
    return Report(current_round, update_time, metrics)
