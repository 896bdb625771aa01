"""What IL adds to an LC's status report: the condition data (PROTOCOL.md).

The report -> condition mapping (`phase` -> stage, `status` -> type) is the stage
machine's; IL's data is `{input, output}` re-marshalled the way Go does (unknown
fields dropped), because the LC and the controller read it back from the condition.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sedna.runtime import Condition, ReportError, report_condition

from .spec import SpecError, cond_data_from

__all__ = ["ReportError", "condition_from_report", "report_data"]

_CONTENT = "content"


def report_data(content: Mapping[str, Any]) -> str:
    """The condition data of a report; a `ReportError` names the field inside `content`.

    The spec parser names fields from a prefix; the prefix is stripped here so the
    machine's `content.` is the only one (Events said `content.content.input...`).
    """
    payload = {k: content[k] for k in ("input", "output") if k in content}
    try:
        data = cond_data_from(payload, "report", _CONTENT)
    except SpecError as exc:
        field = exc.field.removeprefix(_CONTENT).removeprefix(".") or _CONTENT
        raise ReportError(field, exc.reason) from None
    return data.marshal()


def condition_from_report(content: Mapping[str, Any], now: datetime) -> Condition:
    """The condition Sedna's `updateFromEdge` appends for this payload."""
    return report_condition(content, now, report_data)
