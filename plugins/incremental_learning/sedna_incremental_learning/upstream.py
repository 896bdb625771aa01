"""An LC's status report for a job becomes an appended condition (PROTOCOL.md).

`phase` gives the stage, `status` the type; `data` is `{input, output}` re-marshalled
the way Go does (unknown fields dropped), because the LC and the controller read it
back from the condition. Anything invalid is a `ReportError` for that one message.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from .conditions import (
    COMPLETED,
    DEPLOY,
    EVAL,
    FAILED,
    READY,
    TRAIN,
    WAITING,
    Condition,
    new_condition,
)
from .spec import SpecError, cond_data_from

PHASES = {"train": TRAIN, "eval": EVAL, "deploy": DEPLOY}
STATUSES = {"ready": READY, "completed": COMPLETED, "failed": FAILED, "waiting": WAITING}
LC_MESSAGE = "reported by lc"


class ReportError(ValueError):
    """A report that cannot become a condition; `field` names the payload key."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def _pick(content: Mapping[str, Any], key: str, table: Mapping[str, str]) -> str:
    value = content.get(key)
    if not isinstance(value, str):
        raise ReportError(key, f"expected a string, got {type(value).__name__}")
    try:
        return table[value.lower()]
    except KeyError:
        allowed = ", ".join(table)
        raise ReportError(key, f"invalid value {value!r} (expected one of {allowed})") from None


def condition_from_report(content: Mapping[str, Any], now: datetime) -> Condition:
    """The condition Sedna's `updateFromEdge` appends for this payload."""
    stage = _pick(content, "phase", PHASES)
    type_ = _pick(content, "status", STATUSES)
    payload = {k: content[k] for k in ("input", "output") if k in content}
    try:
        data = cond_data_from(payload, "report", "content")
    except SpecError as exc:
        raise ReportError(exc.field, exc.reason) from None
    return new_condition(type_, stage, now, message=LC_MESSAGE, data=data.marshal())
