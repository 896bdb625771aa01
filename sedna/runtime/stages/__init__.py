"""Staged jobs: one stage machine for every Train -> Eval -> Deploy kind.

`StageMachine` is the controller; a feature gives it a `StagedJobFeature` (its pod
builders, downstream plan and report handling) and `StageOptions` (from gm.yaml's
`StagedJobOptions`). `conditions` holds the condition vocabulary and the bounded
history both share.
"""

from __future__ import annotations

from sedna.runtime.stages import conditions
from sedna.runtime.stages.feature import (
    DELETE,
    INSERT,
    STAGE_ANNOTATION_PREFIX,
    Dependency,
    EdgeMessage,
    InvalidJob,
    PodRequest,
    ReportError,
    StageBlocked,
    StagedJobFeature,
    StageOptions,
    StageRetry,
    stage_node,
)
from sedna.runtime.stages.machine import (
    READY_CONDITION_ANNOTATION,
    StageMachine,
    recorded_pod,
)
from sedna.runtime.stages.options import StagedJobOptions
from sedna.runtime.stages.reports import condition_from_report as report_condition
from sedna.runtime.stages.routing import route_by_stage

__all__ = [
    "DELETE",
    "INSERT",
    "READY_CONDITION_ANNOTATION",
    "STAGE_ANNOTATION_PREFIX",
    "Dependency",
    "EdgeMessage",
    "InvalidJob",
    "PodRequest",
    "ReportError",
    "StageBlocked",
    "StageMachine",
    "StageOptions",
    "StageRetry",
    "StagedJobFeature",
    "StagedJobOptions",
    "conditions",
    "recorded_pod",
    "report_condition",
    "route_by_stage",
    "stage_node",
]
