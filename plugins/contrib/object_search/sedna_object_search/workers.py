"""An ObjectSearchService's workers, as Sedna's objectsearch controller makes them.

- ``<svc>-deployment-reidworker``: the Deployment of ``spec.reidWorkers`` (replicas and
  template), worker type ``reidworker``, behind the EdgeMesh Service
  ``<svc>-reidworker`` on port 9378;
- ``<svc>-deployment-userworker``: one replica of ``spec.userWorker.template``, worker
  type ``userworker``, env ``NAMESPACE``, ``SERVICE_NAME``, ``WORKER_NAME``, behind
  ``<svc>-userworker`` on port 9379;
- one pod per ``spec.trackingWorkers[i]``, worker type ``trackingworker``, env
  ``NAMESPACE``, ``SERVICE_NAME``, ``WORKER_NAME``, ``USERWORKER_URL``
  (``<svc>-userworker.<ns>:9379``) and ``EDGEMESH_URL`` (``<svc>-reidworker.<ns>:9378``).

``WORKER_NAME`` is ``userworker-``/``trackingworker-`` and five characters, derived
from the service's UID instead of drawn at random, so a re-render is the same spec.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sedna.runtime import (
    REID_SERVICE_PORT,
    REID_WORKER,
    TRACKING_WORKER,
    DeploymentWant,
    ServiceWant,
    WorkerParam,
    WorkloadPlan,
    checked_template,
    reid_deployment,
    reid_service,
    reid_url,
    require_mapping,
    service_host,
    stable_worker_name,
    tracking_pods,
)

__all__ = [
    "REID_SERVICE_PORT",
    "REID_WORKER",
    "TRACKING_WORKER",
    "USER_WORKER",
    "USER_WORKER_PORT",
    "plan",
]

USER_WORKER = "userworker"
USER_WORKER_PORT = 9379


def plan(owner: Mapping[str, Any]) -> WorkloadPlan:
    """The Services, Deployments and tracking pods of `owner`; `SpecError` names a bad field."""
    spec = require_mapping(owner.get("spec"), "spec")
    meta = owner["metadata"]
    reid = reid_deployment(spec)

    user = require_mapping(spec.get("userWorker"), "spec.userWorker")
    user_template = checked_template(user.get("template"), "spec.userWorker.template")
    user_param = WorkerParam(
        worker_type=USER_WORKER,
        env={
            "NAMESPACE": str(meta.get("namespace") or ""),
            "SERVICE_NAME": str(meta["name"]),
            "WORKER_NAME": stable_worker_name(owner, f"{USER_WORKER}-"),
        },
    )
    user_url = f"{service_host(owner, USER_WORKER)}:{USER_WORKER_PORT}"
    pods = tracking_pods(owner, spec, {"USERWORKER_URL": user_url, "EDGEMESH_URL": reid_url(owner)})

    return WorkloadPlan(
        services=(reid_service(), ServiceWant(USER_WORKER, USER_WORKER_PORT)),
        deployments=(
            reid,
            DeploymentWant(
                USER_WORKER,
                {"replicas": 1, "template": user_template},
                user_param,
                "spec.userWorker.template",
            ),
        ),
        pods=pods,
    )
