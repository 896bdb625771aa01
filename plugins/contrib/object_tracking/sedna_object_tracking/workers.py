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
    DeploymentWant,
    PodWant,
    ServiceWant,
    SpecError,
    WorkerParam,
    WorkloadPlan,
    checked_template,
    optional_count,
    require_mapping,
    service_host,
    stable_worker_name,
)

TRACKING_WORKER = "trackingworker"
REID_WORKER = "reidworker"
REID_SERVICE_PORT = 9378


def plan(owner: Mapping[str, Any]) -> WorkloadPlan:
    """The ReID Service and Deployment and the tracking pods; `SpecError` names a bad field."""
    spec = require_mapping(owner.get("spec"), "spec")
    meta = owner["metadata"]
    ns, name = str(meta.get("namespace") or ""), str(meta["name"])

    reid = require_mapping(spec.get("reidWorkers"), "spec.reidWorkers")
    reid_spec: dict[str, Any] = {
        "template": checked_template(reid.get("template"), "spec.reidWorkers.template")
    }
    replicas = optional_count(reid.get("replicas"), "spec.reidWorkers.replicas")
    if replicas is not None:
        reid_spec["replicas"] = replicas

    trackings = spec.get("trackingWorkers")
    if not isinstance(trackings, list):
        raise SpecError("spec.trackingWorkers", "expected a list of {template}")
    reid_url = f"{service_host(owner, REID_WORKER)}:{REID_SERVICE_PORT}"
    pods = []
    for i, worker in enumerate(trackings):
        at = f"spec.trackingWorkers[{i}]"
        template = checked_template(require_mapping(worker, at).get("template"), f"{at}.template")
        param = WorkerParam(
            worker_type=TRACKING_WORKER,
            env={
                "NAMESPACE": ns,
                "SERVICE_NAME": name,
                "WORKER_NAME": stable_worker_name(owner, f"{TRACKING_WORKER}-", i),
                "EDGEMESH_URL": reid_url,
            },
        )
        pods.append(
            PodWant(f"{TRACKING_WORKER}-{i}", TRACKING_WORKER, template, param, f"{at}.template")
        )

    return WorkloadPlan(
        services=(ServiceWant(REID_WORKER, REID_SERVICE_PORT),),
        deployments=(
            DeploymentWant(
                REID_WORKER,
                reid_spec,
                WorkerParam(worker_type=REID_WORKER),
                "spec.reidWorkers.template",
            ),
        ),
        extra={"pods": tuple(pods)},
    )
