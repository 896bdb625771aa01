"""IL's names for the stage machine's condition vocabulary (`sedna.runtime`).

The vocabulary, the bounded history and failure counting are the runtime's, shared
with every staged-job kind; this module only keeps IL's short names for them.
"""

from __future__ import annotations

from sedna.runtime import (
    Condition,
    ConditionType,
    Stage,
    append_condition,
    condition_fingerprint,
    conditions_of,
    consecutive_failures,
    failure_backoff,
    new_condition,
    trim_conditions,
)

TRAIN = Stage.TRAIN
EVAL = Stage.EVAL
DEPLOY = Stage.DEPLOY
STAGES = Stage.ALL
NEXT_STAGE = Stage.NEXT

WAITING = ConditionType.WAITING
READY = ConditionType.READY
STARTING = ConditionType.STARTING
RUNNING = ConditionType.RUNNING
COMPLETED = ConditionType.COMPLETED
FAILED = ConditionType.FAILED

trim = trim_conditions
fingerprint = condition_fingerprint

__all__ = [
    "COMPLETED",
    "DEPLOY",
    "EVAL",
    "FAILED",
    "NEXT_STAGE",
    "READY",
    "RUNNING",
    "STAGES",
    "STARTING",
    "TRAIN",
    "WAITING",
    "Condition",
    "append_condition",
    "conditions_of",
    "consecutive_failures",
    "failure_backoff",
    "fingerprint",
    "new_condition",
    "trim",
]
