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

USER_WORKER = "userworker"
TRACKING_WORKER = "trackingworker"
REID_WORKER = "reidworker"
REID_SERVICE_PORT = 9378
USER_WORKER_PORT = 9379


def plan(owner: Mapping[str, Any]) -> WorkloadPlan:
    """The Services, Deployments and tracking pods of `owner`; `SpecError` names a bad field."""
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

    user = require_mapping(spec.get("userWorker"), "spec.userWorker")
    user_template = checked_template(user.get("template"), "spec.userWorker.template")
    user_param = WorkerParam(
        worker_type=USER_WORKER,
        env={
            "NAMESPACE": ns,
            "SERVICE_NAME": name,
            "WORKER_NAME": stable_worker_name(owner, f"{USER_WORKER}-"),
        },
    )

    trackings = spec.get("trackingWorkers")
    if not isinstance(trackings, list):
        raise SpecError("spec.trackingWorkers", "expected a list of {template}")
    user_url = f"{service_host(owner, USER_WORKER)}:{USER_WORKER_PORT}"
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
                "USERWORKER_URL": user_url,
                "EDGEMESH_URL": reid_url,
            },
        )
        pods.append(
            PodWant(f"{TRACKING_WORKER}-{i}", TRACKING_WORKER, template, param, f"{at}.template")
        )

    return WorkloadPlan(
        services=(
            ServiceWant(REID_WORKER, REID_SERVICE_PORT),
            ServiceWant(USER_WORKER, USER_WORKER_PORT),
        ),
        deployments=(
            DeploymentWant(
                REID_WORKER,
                reid_spec,
                WorkerParam(worker_type=REID_WORKER),
                "spec.reidWorkers.template",
            ),
            DeploymentWant(
                USER_WORKER,
                {"replicas": 1, "template": user_template},
                user_param,
                "spec.userWorker.template",
            ),
        ),
        extra={"pods": tuple(pods)},
    )
