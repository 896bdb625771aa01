"""An LC's report for a Dataset becomes its status (Sedna's `updateFromEdge`).

Sedna unmarshals the payload into DatasetStatus and replaces the status with it,
`updateTime` defaulting to now. Go's unmarshal rejects a non-integer count but takes
a negative one or a missing one (as 0); here a count must be an integer >= 0, and the
field named in the error is the payload key, so the log line and the Event say which
part of the report was wrong.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

MAX_SAMPLES = 2**63 - 1  # Go's int on the LC side; the CRD says integer
_RFC3339 = re.compile(r"^(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


class ReportError(ValueError):
    """A report that cannot become a status; `field` names the payload key."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def rfc3339(when: datetime) -> str:
    """metav1.Time's wire form: UTC, whole seconds."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_time(value: str) -> datetime:
    m = _RFC3339.match(value)
    if m is None:
        raise ValueError(value)
    date, time, _fraction, zone = m.groups()
    # The fraction is dropped: metav1.Time keeps whole seconds.
    zone = "+00:00" if zone in ("Z", "z") else zone
    return datetime.fromisoformat(f"{date}T{time}{zone}")


def status_from_report(content: object, now: datetime) -> dict[str, Any]:
    """The DatasetStatus for this payload, as it goes into `.status`."""
    if not isinstance(content, Mapping):
        raise ReportError("content", f"expected a JSON object, got {type(content).__name__}")
    count = content.get("numberOfSamples")
    if count is None:
        raise ReportError("numberOfSamples", "missing (expected an integer >= 0)")
    if isinstance(count, bool) or not isinstance(count, int):
        raise ReportError(
            "numberOfSamples", f"expected an integer >= 0, got {type(count).__name__}"
        )
    if count < 0 or count > MAX_SAMPLES:
        raise ReportError("numberOfSamples", f"expected an integer >= 0, got {count}")
    raw_time = content.get("updateTime")
    if raw_time is None:
        when = now
    elif isinstance(raw_time, str):
        try:
            when = _parse_time(raw_time)
        except ValueError:
            raise ReportError("updateTime", f"not an RFC 3339 time: {raw_time[:64]!r}") from None
    else:
        raise ReportError(
            "updateTime", f"expected an RFC 3339 string, got {type(raw_time).__name__}"
        )
    return {"numberOfSamples": count, "updateTime": rfc3339(when)}
