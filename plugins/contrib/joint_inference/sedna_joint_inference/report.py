"""The LC's report for a joint inference service: worker metrics for `status.metrics`.

The Go LC forwards what the edge worker posts (sedna's ``LCReporter``):
``{"phase": "inference", "status": ..., "output": {"ownerInfo": {"inferenceNumber": 42,
"hardExampleNumber": 7, "uploadCloudRatio": 0.16, "startTime": ..., "updateTime": ...}}}``.
As Sedna does, the times are dropped and every other entry becomes a ``{key, value}``
metric (strings as they are, anything else as Go's JSON). Unlike Sedna, the report is
checked and bounded: a report that is not of this shape is rejected naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sedna.runtime import convert_map_to_metrics

__all__ = ["MAX_METRICS", "ReportError", "metrics_from_report"]

MAX_METRICS = 64
MAX_VALUE_CHARS = 1024
IGNORED_KEYS = ("startTime", "updateTime")


class ReportError(ValueError):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def metrics_from_report(content: Any) -> list[dict[str, str]] | None:
    """The metrics to write, or None when the report carries none (Sedna: a warning only)."""
    if not isinstance(content, Mapping):
        raise ReportError("content", "expected an object")
    for key in ("phase", "status"):
        value = content.get(key)
        if value is not None and not isinstance(value, str):
            raise ReportError(f"content.{key}", f"expected a string, got {value!r}")
    output = content.get("output")
    if output is None:
        return None
    if not isinstance(output, Mapping):
        raise ReportError("content.output", "expected an object")
    info = output.get("ownerInfo")
    if info is None:
        return None
    if not isinstance(info, Mapping):
        raise ReportError("content.output.ownerInfo", "expected an object")
    kept = {k: v for k, v in info.items() if k not in IGNORED_KEYS}
    if len(kept) > MAX_METRICS:
        raise ReportError("content.output.ownerInfo", f"more than {MAX_METRICS} entries")
    metrics = convert_map_to_metrics(kept)
    for m in metrics:
        if len(m["key"]) > MAX_VALUE_CHARS or len(m["value"]) > MAX_VALUE_CHARS:
            raise ReportError(
                f"content.output.ownerInfo.{m['key'][:40]}", f"longer than {MAX_VALUE_CHARS} chars"
            )
    return metrics
