"""An LC's status report for a staged job becomes an appended condition (PROTOCOL.md).

`phase` gives the stage, `status` the type, the feature's `report_data` the data (the
LC and the controller read it back from the condition). Anything invalid is a
`ReportError` for that one message, naming the field inside the report's content.

The data is at most `MAX_CONDITION_DATA` bytes, the bound the serving kinds' condition
data has too. Sedna's Go GM appends whatever the LC sends: with the conditions a job
keeps, a few reports of a large URL make the job's status too big for the API, and from
then on no write to the job succeeds, the GM's own included. Here such a report is
refused before anything is written.
"""

from __future__ import annotations

import json
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
from sedna.runtime.worker_reports import MAX_CONDITION_DATA

__all__ = ["LC_MESSAGE", "PHASES", "STATUSES", "bounded_data", "condition_from_report"]

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


def _size(value: object) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def _largest_part(data: str) -> str:
    """The path of what makes `data` large: from the top, the biggest child as long as
    it holds most of its parent (`output.models.0`), for the error to name a field."""
    try:
        value: object = json.loads(data)
    except ValueError:
        return ""
    path: list[str] = []
    while isinstance(value, dict | list) and value:
        items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
        key, child = max(items, key=lambda kv: _size(kv[1]))
        if path and _size(child) * 2 < _size(value):
            break
        path.append(str(key))
        value = child
    return ".".join(path)


def bounded_data(data: str) -> str:
    """`data`, or a `ReportError` naming its largest part when it is over the bound."""
    size = len(data.encode())
    if size > MAX_CONDITION_DATA:
        raise ReportError(
            _largest_part(data) or "input",
            f"the report's condition data is {size} bytes, at most {MAX_CONDITION_DATA}",
        )
    return data


def condition_from_report(
    content: Mapping[str, Any],
    now: datetime,
    data: Callable[[Mapping[str, Any]], str] = lambda content: "",
) -> Condition:
    """The condition Sedna's `updateFromEdge` appends for this payload."""
    stage = _pick(content, "phase", PHASES)
    type_ = _pick(content, "status", STATUSES)
    cond_data = bounded_data(data(content))
    return new_condition(type_, stage, now, message=LC_MESSAGE, data=cond_data)
