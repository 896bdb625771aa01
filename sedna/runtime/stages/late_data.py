"""An LC's Train/Eval `completed` report that arrives after its worker's exit.

A train or eval worker reports its result to its LC and then exits, so the LC's report
(with the trained model or the evaluation metrics as condition data) and the pod's
`Succeeded` race to the GM. When the pod wins, the machine has already written the
stage's `Completed` (reason `WorkerSucceeded`, no data) and moved on; the LC, which
reads the newest Completed condition of the stage that has data, would then use the
previous round's models and metrics.

Sedna's Go GM appends the late report as one more Completed condition (so the job
goes back to that stage's Completed and then forward to the next Waiting again). Here
the report's data is written into the machine's data-less Completed of that stage in
the current round instead: the latest condition of the stage carries the report's data
in either order, and the job's state never steps back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sedna.runtime.stages.conditions import COMPLETED, EVAL, TRAIN, WAITING, Condition

__all__ = ["POD_EXIT_REASON", "carries_data", "fill_in", "late_completion"]

POD_EXIT_REASON = "WorkerSucceeded"
"""The reason of the Completed condition the machine writes from the pod's exit."""


def carries_data(data: object) -> bool:
    """Whether condition data says anything: Go marshals a report without input and
    output as `{}`, which the LC cannot use either."""
    if not isinstance(data, str) or not data:
        return False
    try:
        return bool(json.loads(data))
    except ValueError:
        return True  # not JSON, but something: the LC's to judge


def _round_start(conds: Sequence[Mapping[str, Any]]) -> int:
    """Index of the last Train/Waiting (a Sedna round starts there), 0 if none."""
    for i in range(len(conds) - 1, -1, -1):
        if conds[i].get("stage") == TRAIN and conds[i].get("type") == WAITING:
            return i
    return 0


def late_completion(conds: Sequence[Mapping[str, Any]], content: Any) -> int | None:
    """The index of the condition a late `completed` report fills in, else None.

    That is the latest condition of the report's stage (Train or Eval) in the current
    round when it is the machine's Completed from the pod's exit without data.
    """
    if not isinstance(content, Mapping):
        return None
    if str(content.get("status") or "").lower() != "completed":
        return None
    stage = str(content.get("phase") or "").capitalize()
    if stage not in (TRAIN, EVAL):
        return None
    for i in range(len(conds) - 1, _round_start(conds) - 1, -1):
        cond = conds[i]
        if cond.get("stage") != stage:
            continue
        if (
            cond.get("type") == COMPLETED
            and cond.get("reason") == POD_EXIT_REASON
            and not carries_data(cond.get("data"))
        ):
            return i
        return None
    return None


def fill_in(
    conds: Sequence[Mapping[str, Any]], index: int, report: Mapping[str, Any]
) -> list[Condition]:
    """The conditions with the report's data, message and heartbeat time on `index`."""
    out = [dict(c) for c in conds]
    target = out[index]
    target["data"] = report.get("data", "")
    target["message"] = report.get("message", "")
    target["lastHeartbeatTime"] = report.get("lastHeartbeatTime", target.get("lastHeartbeatTime"))
    return out
