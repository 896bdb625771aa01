"""The ReID workers the multi-edge services share: Sedna's reid Deployment behind its
EdgeMesh Service, and one bare pod per tracking worker.

ObjectSearchService and ObjectTrackingService both run ``spec.reidWorkers`` as the
``<svc>-deployment-reidworker`` Deployment (replicas and template, worker type
``reidworker``) behind the EdgeMesh Service ``<svc>-reidworker`` on port 9378, and
one pod per ``spec.trackingWorkers[i]`` (worker type ``trackingworker``, env
``NAMESPACE``, ``SERVICE_NAME``, ``WORKER_NAME`` and what the service adds, such as
``EDGEMESH_URL``). ``WORKER_NAME`` is ``trackingworker-`` and five characters derived
from the service's UID, so a re-render is the same spec.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sedna.runtime.owned_pods import stable_worker_name
from sedna.runtime.workers import WorkerParam
from sedna.runtime.workload_specs import checked_template, optional_count, service_host
from sedna.runtime.workloads.parsing import require_mapping
from sedna.runtime.workloads.wants import DeploymentWant, PodWant, ServiceWant, SpecError

__all__ = [
    "REID_SERVICE_PORT",
    "REID_WORKER",
    "TRACKING_WORKER",
    "reid_deployment",
    "reid_service",
    "reid_url",
    "tracking_pods",
]

REID_WORKER = "reidworker"
TRACKING_WORKER = "trackingworker"
REID_SERVICE_PORT = 9378


def reid_deployment(spec: Mapping[str, Any]) -> DeploymentWant:
    """The Deployment of ``spec.reidWorkers``; `SpecError` names a bad field."""
    reid = require_mapping(spec.get("reidWorkers"), "spec.reidWorkers")
    want: dict[str, Any] = {
        "template": checked_template(reid.get("template"), "spec.reidWorkers.template")
    }
    replicas = optional_count(reid.get("replicas"), "spec.reidWorkers.replicas")
    if replicas is not None:
        want["replicas"] = replicas
    return DeploymentWant(
        REID_WORKER, want, WorkerParam(worker_type=REID_WORKER), "spec.reidWorkers.template"
    )


def reid_service() -> ServiceWant:
    """The EdgeMesh Service in front of the ReID workers."""
    return ServiceWant(REID_WORKER, REID_SERVICE_PORT)


def reid_url(owner: Mapping[str, Any]) -> str:
    """``<svc>-reidworker.<ns>:9378``, the tracking workers' ``EDGEMESH_URL``."""
    return f"{service_host(owner, REID_WORKER)}:{REID_SERVICE_PORT}"


def tracking_pods(
    owner: Mapping[str, Any], spec: Mapping[str, Any], env: Mapping[str, str]
) -> tuple[PodWant, ...]:
    """One pod per ``spec.trackingWorkers[i]``, its env the service's names then `env`."""
    trackings = spec.get("trackingWorkers")
    if not isinstance(trackings, list):
        raise SpecError("spec.trackingWorkers", "expected a list of {template}")
    meta = owner["metadata"]
    ns, name = str(meta.get("namespace") or ""), str(meta["name"])
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
                **env,
            },
        )
        pods.append(
            PodWant(f"{TRACKING_WORKER}-{i}", TRACKING_WORKER, template, param, f"{at}.template")
        )
    return tuple(pods)
