"""Service-style status: append-only conditions, bounded, and the terminal Failed.

Sedna's serving kinds (JointInferenceService, ObjectSearchService, ...) keep a list of
conditions whose latest is the current state, plus ``active``/``failed`` counts and
``startTime``. A condition is appended when the (type, reason) changes; the list keeps
the latest `limit` (Sedna's grows without bound).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "CONDITION_FAILED",
    "CONDITION_PENDING",
    "CONDITION_RUNNING",
    "NON_TERMINAL_FAILURE_REASONS",
    "REASON_INVALID_SPEC",
    "append_condition",
    "append_service_condition",
    "is_finished",
    "latest_condition",
]

CONDITION_PENDING = "Pending"
CONDITION_RUNNING = "Running"
CONDITION_FAILED = "Failed"
REASON_INVALID_SPEC = "InvalidSpec"

NON_TERMINAL_FAILURE_REASONS = frozenset({REASON_INVALID_SPEC})
"""``Failed`` reasons an edit of the spec can cure: they do not finish the owner."""


def latest_condition(status: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    conds = (status or {}).get("conditions") or []
    return conds[-1] if conds and isinstance(conds[-1], Mapping) else None


def is_finished(owner: Mapping[str, Any], terminal: Sequence[str] = (CONDITION_FAILED,)) -> bool:
    """Whether a terminal condition (True, reason not spec-curable) was ever recorded.

    Sedna's ``isServiceFinished``: once Failed, the owner is left as it is.
    """
    for c in (owner.get("status") or {}).get("conditions") or []:
        if not isinstance(c, Mapping) or c.get("type") not in terminal:
            continue
        if c.get("status") == "True" and c.get("reason") not in NON_TERMINAL_FAILURE_REASONS:
            return True
    return False


def append_service_condition(
    status: dict[str, Any],
    ctype: str,
    reason: str,
    message: str,
    now: str,
    *,
    limit: int = 20,
) -> bool:
    """Append a True condition unless the latest has this type and reason; keep `limit`.

    Returns whether one was appended. The same (type, reason) with a new message updates
    the latest's message and heartbeat only.
    """
    conds = [c for c in status.get("conditions") or [] if isinstance(c, Mapping)]
    latest = conds[-1] if conds else None
    if latest is not None and latest.get("type") == ctype and latest.get("reason") == reason:
        if latest.get("message") != message:
            updated = dict(latest)
            updated["message"] = message
            updated["lastHeartbeatTime"] = now
            conds[-1] = updated
            status["conditions"] = conds
        return False
    conds.append(
        {
            "type": ctype,
            "status": "True",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
            "reason": reason,
            "message": message,
        }
    )
    status["conditions"] = conds[-limit:] if limit > 0 else conds
    return True


append_condition = append_service_condition
"""The family's own name for it (``sedna.runtime`` exports it as `append_service_condition`:
`append_condition` there is the staged jobs' one)."""
