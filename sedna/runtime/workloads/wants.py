"""What an owner wants: the Deployments, Services and HPAs a reconcile makes exist.

A feature turns its custom resource into a `WorkloadPlan` (pure: no API calls besides
what the feature reads itself, e.g. a Model); `OwnedWorkloads.ensure` makes the cluster
match it. The plan is complete: an object the owner controls but the plan does not
name is deleted, which is how an HPA removed from the spec disappears.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from sedna.runtime.workers.types import WorkerParam

__all__ = [
    "DeploymentWant",
    "HPAWant",
    "ServiceWant",
    "SpecError",
    "Waiting",
    "WorkloadPlan",
]


class SpecError(ValueError):
    """The owner's spec is wrong at `field` (e.g. ``spec.cloudWorker.hpa.maxReplicas``).

    The controller answers with a Warning Event and a ``Failed`` condition of reason
    ``InvalidSpec`` naming the field; it is not terminal: an edit of the spec is synced.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class Waiting(Exception):
    """Something the plan needs is missing (a Model): ``Pending`` with `reason`, then retry.

    `field` names where the owner refers to it. The feature should also enqueue the
    owner when the missing object appears; `retry_after` is the fallback poll.
    """

    def __init__(self, field: str, reason: str, message: str, retry_after: float = 30.0) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = reason
        self.message = message
        self.retry_after = retry_after


@dataclass(frozen=True)
class DeploymentWant:
    """One Deployment ``<owner>-deployment-<worker type>`` from a DeploymentSpec.

    `spec` holds ``template`` and optionally ``replicas`` (without it the Deployment's
    replicas are left to its HPA or the server default). `field` is where the template
    lives in the owner, for errors. `param` is injected as for pods (labels, env,
    storage initializer).
    """

    worker_type: str
    spec: Mapping[str, Any]
    param: WorkerParam
    field: str = "spec.template"


@dataclass(frozen=True)
class ServiceWant:
    """A Service ``<owner>-<worker type>`` in front of that worker type's pods.

    ``edgemesh``: ClusterIP with port name ``tcp-0`` (Sedna's ``CreateEdgeMeshService``);
    ``nodeport``: NodePort with `external_ip` (Sedna's ``CreateKubernetesService``).
    """

    worker_type: str
    port: int
    flavor: Literal["edgemesh", "nodeport"] = "edgemesh"
    external_ip: str = ""


@dataclass(frozen=True)
class HPAWant:
    """An HPA ``hpa-<target>`` scaling the Deployment `target` (Sedna's HPA fields)."""

    target: str
    worker_type: str
    hpa: Mapping[str, Any]


@dataclass(frozen=True)
class WorkloadPlan:
    """Everything the owner should control, in creation order: Services, Deployments, HPAs."""

    deployments: tuple[DeploymentWant, ...] = ()
    services: tuple[ServiceWant, ...] = ()
    hpas: tuple[HPAWant, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
