"""An LC's status report for a staged job becomes an appended condition (PROTOCOL.md).

`phase` gives the stage, `status` the type, the feature's `report_data` the data (the
LC and the controller read it back from the condition). Anything invalid is a
`ReportError` for that one message, naming the field inside the report's content.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from sedna.runtime.stages.conditions import (
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
from sedna.runtime.stages.feature import ReportError

__all__ = ["LC_MESSAGE", "PHASES", "STATUSES", "condition_from_report"]

PHASES = {"train": TRAIN, "eval": EVAL, "deploy": DEPLOY}
STATUSES = {"ready": READY, "completed": COMPLETED, "failed": FAILED, "waiting": WAITING}
LC_MESSAGE = "reported by lc"


def _pick(content: Mapping[str, Any], key: str, table: Mapping[str, str]) -> str:
    value = content.get(key)
    if not isinstance(value, str):
        raise ReportError(key, f"expected a string, got {type(value).__name__}")
    try:
        return table[value.lower()]
    except KeyError:
        allowed = ", ".join(table)
        raise ReportError(key, f"invalid value {value!r} (expected one of {allowed})") from None


def condition_from_report(
    content: Mapping[str, Any],
    now: datetime,
    data: Callable[[Mapping[str, Any]], str] = lambda content: "",
) -> Condition:
    """The condition Sedna's `updateFromEdge` appends for this payload."""
    stage = _pick(content, "phase", PHASES)
    type_ = _pick(content, "status", STATUSES)
    return new_condition(type_, stage, now, message=LC_MESSAGE, data=data(content))
