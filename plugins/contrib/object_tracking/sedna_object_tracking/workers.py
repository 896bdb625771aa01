"""An ObjectTrackingService's workers: Sedna's CRD, run the way its sibling kinds are.

Sedna defines ObjectTrackingService (``spec.trackingWorkers``, ``spec.reidWorkers``)
but no controller runs it. Ours gives it the workers ObjectSearchService has, less the
user worker:

- ``<svc>-deployment-reidworker``: the Deployment of ``spec.reidWorkers``, worker type
  ``reidworker``, behind the EdgeMesh Service ``<svc>-reidworker`` on port 9378;
- one pod per ``spec.trackingWorkers[i]``, worker type ``trackingworker``, env
  ``NAMESPACE``, ``SERVICE_NAME``, ``WORKER_NAME`` and ``EDGEMESH_URL``
  (``<svc>-reidworker.<ns>:9378``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sedna.runtime import (
    REID_SERVICE_PORT,
    REID_WORKER,
    TRACKING_WORKER,
    WorkloadPlan,
    reid_deployment,
    reid_service,
    reid_url,
    require_mapping,
    tracking_pods,
)

__all__ = ["REID_SERVICE_PORT", "REID_WORKER", "TRACKING_WORKER", "plan"]


def plan(owner: Mapping[str, Any]) -> WorkloadPlan:
    """The ReID Service and Deployment and the tracking pods; `SpecError` names a bad field."""
    spec = require_mapping(owner.get("spec"), "spec")
    reid = reid_deployment(spec)
    pods = tracking_pods(owner, spec, {"EDGEMESH_URL": reid_url(owner)})
    return WorkloadPlan(services=(reid_service(),), deployments=(reid,), pods=pods)
