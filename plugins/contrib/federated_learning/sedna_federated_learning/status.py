"""The job's status: phases, counts, conditions, and how many conditions a job keeps.

Sedna's condition types (Complete, Failed, Training) and phases (Pending, Running,
Succeeded, Failed). Conditions are an append-only history here as in Sedna, but
bounded: Sedna appends one Training condition per LC report forever, so a long job's
status grows past what etcd accepts. The oldest non-terminal conditions go first; a
Complete or Failed condition is never dropped, so a finished job stays finished.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from sedna.runtime import active_pod_count

COMPLETE = "Complete"
FAILED = "Failed"
TRAINING = "Training"
TERMINAL = (COMPLETE, FAILED)

PENDING = "Pending"
RUNNING = "Running"
SUCCEEDED = "Succeeded"
PHASE_FAILED = "Failed"

ROUND_REASON = "DoTraining"  # Sedna's reason for a round report
RUN_REASON = "NewTrainingRun"  # ours: a new aggregation worker, rounds count from 1 again
_ROUND_MESSAGE = re.compile(r"^Round (\d+) ")

Obj = Mapping[str, Any]


def conditions(job: Obj) -> list[dict[str, Any]]:
    raw = (job.get("status") or {}).get("conditions")
    return [dict(c) for c in raw if isinstance(c, Mapping)] if isinstance(raw, list) else []


def is_finished(job: Obj) -> bool:
    """Sedna's `IsJobFinished`: a Complete or Failed condition with status True."""
    return any(c.get("type") in TERMINAL and c.get("status") == "True" for c in conditions(job))


def new_condition(
    ctype: str, now: str, reason: str = "", message: str = "", status: str = "True"
) -> dict[str, Any]:
    """Sedna's `NewJobCondition` (probe and heartbeat time both now)."""
    cond: dict[str, Any] = {
        "type": ctype,
        "status": status,
        "lastProbeTime": now,
        "lastHeartbeatTime": now,
    }
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    return cond


def same_condition(a: Obj, b: Obj) -> bool:
    """Equal but for their times: appending `b` after `a` would only repeat it."""
    keys = ("type", "status", "reason", "message")
    return all(a.get(k, "") == b.get(k, "") for k in keys)


def append_bounded(conds: list[dict[str, Any]], cond: dict[str, Any], limit: int) -> None:
    """Append, then drop the oldest non-terminal conditions beyond `limit`."""
    conds.append(cond)
    while len(conds) > limit:
        for i, c in enumerate(conds[:-1]):
            if c.get("type") not in TERMINAL:
                del conds[i]
                break
        else:
            del conds[0]


def round_message(current_round: int, update_time: str) -> str:
    """Sedna's message for a round report (kept: dashboards and users read it)."""
    return f"Round {current_round} reaches at {update_time}"


def run_marker(now: str, generation: str) -> dict[str, Any]:
    """The condition that starts a training run: appended when the aggregation worker is
    made anew (a spec rollout, a deleted aggregator) while rounds of the run before are
    recorded; the new aggregator counts its rounds from 1 again."""
    return new_condition(
        TRAINING,
        now,
        RUN_REASON,
        f"a new aggregation worker (generation {generation}) starts; rounds count from 1 again",
    )


def latest_round(job: Obj) -> int:
    """The highest round recorded in the current training run (0 when none): the Training
    conditions after the latest `run_marker`, or all of them when there is none.

    Bounding drops the oldest non-terminal conditions first, so a marker goes only after
    everything before it: what remains after it, or without it, is the current run.
    """
    best = 0
    for c in conditions(job):
        if c.get("type") != TRAINING:
            continue
        if c.get("reason") == RUN_REASON:
            best = 0
            continue
        if c.get("reason") != ROUND_REASON:
            continue  # a blocked job's Training=False, say
        m = _ROUND_MESSAGE.match(str(c.get("message") or ""))
        if m:
            best = max(best, int(m.group(1)))
    return best


def pod_phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or PENDING)


def counts(pods: Sequence[Obj]) -> tuple[int, int, int]:
    """(active, succeeded, failed) as Sedna counts them (active: the runtime's rule)."""
    phases = [pod_phase(p) for p in pods]
    return active_pod_count(pods), phases.count("Succeeded"), phases.count("Failed")


def phase_of(pods: Sequence[Obj], desired: int) -> str:
    """Pending until every worker exists and none waits to start; then Running.

    Terminal phases are decided by the controller (they also append a condition).
    Sedna writes Running from the first sync on, before any pod has started; Pending
    is its documented meaning ("one or more of the pods has not been started").
    """
    if len(pods) < desired:
        return PENDING
    if any(pod_phase(p) == PENDING for p in pods):
        return PENDING
    return RUNNING
