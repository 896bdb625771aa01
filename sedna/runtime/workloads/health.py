"""How healthy an owned Deployment is, read from its status like kubectl rollout status.

Sedna's Go GM counts a Deployment as active when its latest condition is
``Progressing`` and as failed otherwise, so a Deployment whose controller has not yet
written any condition counts as failed and the service goes terminally Failed right
after creation (Sedna issue 234). Here a Deployment fails only when the Deployment
controller says so: ``Progressing=False`` with ``ProgressDeadlineExceeded`` or
``ReplicaFailure=True``; until it is ``Available`` it is merely progressing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

__all__ = ["DeploymentHealth", "deployment_failure_message", "deployment_health"]

DeploymentHealth = Literal["Missing", "Deleting", "Progressing", "Available", "Failed"]


def _conditions(dep: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for c in (dep.get("status") or {}).get("conditions") or []:
        if isinstance(c, Mapping) and isinstance(c.get("type"), str):
            out[c["type"]] = c
    return out


def deployment_health(dep: Mapping[str, Any] | None) -> DeploymentHealth:
    """The Deployment's state as a workload owner sees it (None: it does not exist)."""
    if dep is None:
        return "Missing"
    meta = dep.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return "Deleting"
    conds = _conditions(dep)
    progressing = conds.get("Progressing") or {}
    if progressing.get("status") == "False" and (
        progressing.get("reason") == "ProgressDeadlineExceeded"
    ):
        return "Failed"
    if (conds.get("ReplicaFailure") or {}).get("status") == "True":
        return "Failed"
    status = dep.get("status") or {}
    generation = meta.get("generation")
    observed = status.get("observedGeneration")
    if isinstance(generation, int) and isinstance(observed, int) and observed < generation:
        return "Progressing"  # the status is about an older spec
    if (conds.get("Available") or {}).get("status") == "True":
        return "Available"
    return "Progressing"


def deployment_failure_message(dep: Mapping[str, Any]) -> str:
    """The message of the condition that makes the Deployment failed ("" if none)."""
    conds = _conditions(dep)
    for ctype in ("ReplicaFailure", "Progressing"):
        c = conds.get(ctype) or {}
        bad = c.get("status") == ("True" if ctype == "ReplicaFailure" else "False")
        if bad:
            return str(c.get("message") or c.get("reason") or ctype)
    return ""
