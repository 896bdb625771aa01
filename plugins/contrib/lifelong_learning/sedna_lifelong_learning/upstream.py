"""An LC's status report for a job: the condition to append and the knowledge base to keep.

`phase` gives the stage, `status` the type; `data` is `{input, output}` re-marshalled
the way Go does (unknown fields such as the worker's `ownerInfo` dropped), because the
LC and the controller read it back from the condition. Anything invalid is a
`ReportError` naming the payload key, for that one message only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import knowledge_base
from .spec import SpecError, cond_data_from

PHASES = {"train": "Train", "eval": "Eval", "deploy": "Deploy"}
STATUSES = {"ready": "Ready", "completed": "Completed", "failed": "Failed", "waiting": "Waiting"}
LC_MESSAGE = "reported by lc"


class ReportError(ValueError):
    """A report that cannot become a condition; `field` names the payload key."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


@dataclass(frozen=True)
class Report:
    """What one valid report changes: a condition (stage, type, data) and maybe the KB."""

    stage: str
    type: str
    data: str
    knowledge_base: dict[str, Any] | None


def _pick(content: Mapping[str, Any], key: str, table: Mapping[str, str]) -> str:
    value = content.get(key)
    if not isinstance(value, str):
        raise ReportError(key, f"expected a string, got {type(value).__name__}")
    try:
        return table[value.lower()]
    except KeyError:
        allowed = ", ".join(table)
        raise ReportError(key, f"invalid value {value!r} (expected one of {allowed})") from None


def parse_report(content: object) -> Report:
    """Sedna's `updateFromEdge` for this payload, validated before anything is written."""
    if not isinstance(content, Mapping):
        raise ReportError("content", f"expected an object, got {type(content).__name__}")
    stage = _pick(content, "phase", PHASES)
    type_ = _pick(content, "status", STATUSES)
    payload = {k: content[k] for k in ("input", "output") if k in content}
    try:
        data = cond_data_from(payload, "report", "content")
    except SpecError as exc:
        raise ReportError(exc.field.removeprefix("content."), exc.reason) from None
    return Report(stage, type_, data.marshal(), knowledge_base.from_report(data))
