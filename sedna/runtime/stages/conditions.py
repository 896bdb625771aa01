"""Staged-job conditions: Sedna's stage/type vocabulary, bounded history, failure counting.

The condition list is the job's state machine: the latest entry is the state, and the
LC reads older entries (the latest Train/Eval `Completed` report with output models).
Sedna appends forever, so a job's object grows by ~5 conditions per cycle until the
API server refuses it; `append_condition` keeps a bounded window that still holds
everything a reader needs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

TRAIN = "Train"
EVAL = "Eval"
DEPLOY = "Deploy"
STAGES = (TRAIN, EVAL, DEPLOY)

WAITING = "Waiting"
READY = "Ready"
STARTING = "Starting"
RUNNING = "Running"
COMPLETED = "Completed"
FAILED = "Failed"

NEXT_STAGE = {TRAIN: EVAL, EVAL: DEPLOY, DEPLOY: TRAIN}


class Stage:
    """Sedna's stages (a condition's `stage`), in cycle order."""

    TRAIN = TRAIN
    EVAL = EVAL
    DEPLOY = DEPLOY
    ALL = STAGES
    NEXT = NEXT_STAGE


class ConditionType:
    """Sedna's condition types (a condition's `type`)."""

    WAITING = WAITING
    READY = READY
    STARTING = STARTING
    RUNNING = RUNNING
    COMPLETED = COMPLETED
    FAILED = FAILED


Condition = dict[str, Any]


def rfc3339(when: datetime) -> str:
    """`metav1.Time` form: UTC, whole seconds."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: object) -> datetime | None:
    """A condition timestamp, or None when absent or unreadable (then no backoff applies)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return None


def new_condition(
    type_: str,
    stage: str,
    now: datetime,
    *,
    reason: str = "",
    message: str = "",
    data: str = "",
) -> Condition:
    """A condition as Sedna's `NewIncrementalJobCondition` writes it (plus reason/message).

    Empty reason/message/data are left out, as Go's omitempty does.
    """
    ts = rfc3339(now)
    cond: Condition = {
        "type": type_,
        "status": "True",
        "stage": stage,
        "lastHeartbeatTime": ts,
        "lastTransitionTime": ts,
    }
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    if data:
        cond["data"] = data
    return cond


def latest(conditions: Sequence[Mapping[str, Any]] | None) -> Mapping[str, Any] | None:
    return conditions[-1] if conditions else None


def conditions_of(job: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The job's conditions; anything but a list of objects counts as none."""
    raw = (job.get("status") or {}).get("conditions")
    if not isinstance(raw, list):
        return []
    return [c for c in raw if isinstance(c, Mapping)]


def _must_keep(conditions: Sequence[Mapping[str, Any]]) -> set[int]:
    """Indexes a reader still needs: the latest condition of each stage, and the latest
    `Completed` condition with data of each stage (where the LC finds the trained and
    evaluated models)."""
    keep: set[int] = set()
    seen_stage: set[str] = set()
    seen_data: set[str] = set()
    for i in range(len(conditions) - 1, -1, -1):
        c = conditions[i]
        stage = str(c.get("stage", ""))
        if stage not in seen_stage:
            seen_stage.add(stage)
            keep.add(i)
        if c.get("type") == COMPLETED and c.get("data") and stage not in seen_data:
            seen_data.add(stage)
            keep.add(i)
    return keep


def trim(conditions: list[Condition], max_conditions: int) -> list[Condition]:
    """Keep at most `max_conditions` (>= 6), the newest, plus what `_must_keep` protects.

    Order is preserved, so the last condition stays the state. With three stages the
    protected set has at most six entries, hence the lower bound on the option.
    """
    if len(conditions) <= max_conditions:
        return conditions
    keep = _must_keep(conditions)
    i = len(conditions) - 1
    while len(keep) < max_conditions and i >= 0:
        keep.add(i)
        i -= 1
    return [c for i, c in enumerate(conditions) if i in keep]


def append_condition(
    conditions: Sequence[Mapping[str, Any]], cond: Condition, max_conditions: int
) -> list[Condition]:
    out = [dict(c) for c in conditions]
    out.append(cond)
    return trim(out, max_conditions)


def consecutive_failures(conditions: Sequence[Mapping[str, Any]]) -> int:
    """`Failed` conditions since the job last completed a whole cycle (Deploy Completed).

    A stage that fails sends the job back to Train; counting from the last successful
    deploy (not the last success of any stage) makes "Train ok, Eval fails" loops back
    off too. Trimming may hide old failures, which only caps the count; the backoff is
    at its maximum long before that.
    """
    n = 0
    for c in reversed(conditions):
        if c.get("stage") == DEPLOY and c.get("type") == COMPLETED:
            break
        if c.get("type") == FAILED:
            n += 1
    return n


def failure_backoff(failures: int, base: float, maximum: float) -> float:
    """Seconds to wait before retry number `failures`: base, doubling, capped."""
    if failures <= 0:
        return 0.0
    if failures > 64:
        return maximum
    return float(min(base * 2.0 ** (failures - 1), maximum))


def fingerprint(cond: Mapping[str, Any] | None) -> str:
    """Identity of a condition for "has the state moved since I looked" checks."""
    if cond is None:
        return ""
    return json.dumps(cond, sort_keys=True, separators=(",", ":"))


def describe(cond: Mapping[str, Any] | None) -> str:
    if cond is None:
        return "(none)"
    return f"{cond.get('stage', '?')}/{cond.get('type', '?')}"


# Public names for the runtime's API (sedna.runtime), where bare `trim` would say too little.
trim_conditions = trim
condition_fingerprint = fingerprint
