"""HorizontalPodAutoscalers for worker deployments (Sedna's ``CreateHPA``/``UpdateHPA``)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from sedna.runtime.workers.labels import JobRef, controller_owner_reference, generate_labels

__all__ = ["apply_hpa_spec", "build_hpa", "hpa_name"]


def hpa_name(scale_target_name: str) -> str:
    """``hpa-<target>``: one HPA per scaled deployment."""
    return "hpa-" + scale_target_name


def apply_hpa_spec(
    hpa_obj: dict[str, Any],
    job: JobRef,
    kind: str,
    scale_target_name: str,
    worker_type: str,
    hpa: Mapping[str, Any],
) -> None:
    """Set labels, owner and spec from Sedna's ``HPA`` fields, keeping everything else."""
    meta = hpa_obj.setdefault("metadata", {})
    meta["labels"] = generate_labels(job, worker_type)
    meta["ownerReferences"] = [controller_owner_reference(job)]
    spec = hpa_obj.setdefault("spec", {})
    spec["maxReplicas"] = hpa.get("maxReplicas", 0)
    spec["scaleTargetRef"] = {"apiVersion": "apps/v1", "kind": kind, "name": scale_target_name}
    for key in ("minReplicas", "metrics", "behavior"):
        if hpa.get(key) is not None:
            spec[key] = copy.deepcopy(hpa[key])
        else:
            spec.pop(key, None)


def build_hpa(
    job: JobRef, kind: str, scale_target_name: str, worker_type: str, hpa: Mapping[str, Any]
) -> dict[str, Any]:
    """A new autoscaling/v2 HPA for the target."""
    obj: dict[str, Any] = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": hpa_name(scale_target_name), "namespace": job.namespace},
    }
    apply_hpa_spec(obj, job, kind, scale_target_name, worker_type, hpa)
    return obj
