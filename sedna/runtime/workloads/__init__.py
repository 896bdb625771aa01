"""The owned-workloads family: Deployments, Services and HPAs a Sedna resource controls.

For plugin authors (docs/workload-family.md): subclass `WorkloadController`, give it the
owner's `Resource`, implement ``plan(owner) -> WorkloadPlan``; the base reads the owner
from the cache, creates, adopts, heals, rolls out and prunes the owned objects
(`OwnedWorkloads`), and writes the status (`StatusDecision`, conditions bounded, terminal
``Failed``). The pieces are usable alone too.
"""

from __future__ import annotations

from sedna.runtime.workloads.conditions import (
    CONDITION_FAILED,
    CONDITION_PENDING,
    CONDITION_RUNNING,
    REASON_INVALID_SPEC,
    append_condition,
    append_service_condition,
    is_finished,
    latest_condition,
)
from sedna.runtime.workloads.controller import StatusDecision, WorkloadController
from sedna.runtime.workloads.health import (
    DeploymentHealth,
    deployment_failure_message,
    deployment_health,
)
from sedna.runtime.workloads.owned import (
    SPEC_HASH_ANNOTATION,
    Observed,
    OwnedWorkloads,
    WorkloadConflict,
    controller_of,
    spec_hash,
)
from sedna.runtime.workloads.parsing import parse_hpa, parse_template, require_mapping, require_str
from sedna.runtime.workloads.wants import (
    DeploymentWant,
    HPAWant,
    ServiceWant,
    SpecError,
    Waiting,
    WorkloadPlan,
)

__all__ = [
    "CONDITION_FAILED",
    "CONDITION_PENDING",
    "CONDITION_RUNNING",
    "REASON_INVALID_SPEC",
    "SPEC_HASH_ANNOTATION",
    "DeploymentHealth",
    "DeploymentWant",
    "HPAWant",
    "Observed",
    "OwnedWorkloads",
    "ServiceWant",
    "SpecError",
    "StatusDecision",
    "Waiting",
    "WorkloadConflict",
    "WorkloadController",
    "WorkloadPlan",
    "append_condition",
    "append_service_condition",
    "controller_of",
    "deployment_failure_message",
    "deployment_health",
    "is_finished",
    "latest_condition",
    "parse_hpa",
    "parse_template",
    "require_mapping",
    "require_str",
    "spec_hash",
]
