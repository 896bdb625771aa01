"""The FeatureExtractionService controller: one Deployment and its Service, LC metrics.

Sedna parity (pkg/globalmanager/controllers/featureextraction): the Deployment
``<svc>-deployment-fe`` from the spec's inline DeploymentSpec (``replicas``,
``template``), worker type ``fe``, the Model of ``spec.model.name`` fetched into
``MODEL_URL`` by the storage initializer, env ``WORKER_NAME``, ``NAMESPACE``,
``SERVICE_NAME``, ``LC_SERVER`` and ``KAFKA_ENABLED`` (only with ``kafkaSupport``); the
EdgeMesh Service ``<svc>-fe`` on port 6000; status ``startTime``, ``active`` (the
Deployment's live pods), ``failed``, conditions and ``metrics``, the latter from the
workers' LC reports (``output.ownerInfo`` less its times).

Sedna's faults, fixed:

1. Sedna expects as many Deployments as its spec struct has fields (three: it counts
   ``reflect.TypeOf(spec).NumField()``), finds one, and flips the service to
   ``Failed`` for good on its second sync. Here one Deployment is expected, and its
   health (the family's `deployment_health`) decides.
2. Sedna dereferences ``spec.replicas`` and panics when it is unset; here it defaults
   to 1, as the Deployment API does.
3. A missing Model is ``Pending`` (``ModelNotFound``) until it appears, not a terminal
   failure; reports are taken only from a node running one of the service's pods.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from sedna.runtime import (
    CONDITION_FAILED,
    MODELS,
    ControllerContext,
    DeploymentWant,
    Observed,
    ServiceWant,
    StatusDecision,
    WorkerParam,
    WorkerReports,
    WorkloadController,
    WorkloadPlan,
    checked_template,
    enqueue_on_model,
    model_mount,
    optional_bool,
    optional_count,
    record_metrics,
    require_mapping,
    require_str,
    sedna_resource,
    stable_worker_name,
)

RESOURCE = sedna_resource("featureextractionservices")
FE_WORKER = "fe"
FE_PORT = 6000


def _model_name(owner: Mapping[str, Any]) -> str | None:
    model = (owner.get("spec") or {}).get("model")
    name = model.get("name") if isinstance(model, Mapping) else None
    return name if isinstance(name, str) else None


class FeatureExtractionController(WorkloadController):
    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx, RESOURCE, label="feature extraction service")
        self.models = ctx.informers.informer(MODELS)
        enqueue_on_model(self.models, self.owners, _model_name, self.enqueue)
        self.reports = WorkerReports(
            ctx, RESOURCE, self.owners, ctx.informers.worker_pods(RESOURCE), record_metrics
        )

    def plan(self, owner: Mapping[str, Any]) -> WorkloadPlan:
        spec = require_mapping(owner.get("spec"), "spec")
        meta = owner["metadata"]
        template = checked_template(spec.get("template"), "spec.template")
        replicas = optional_count(spec.get("replicas"), "spec.replicas", default=1)
        model = require_mapping(spec.get("model"), "spec.model")
        model_name = require_str(model.get("name"), "spec.model.name")
        env = {
            "WORKER_NAME": stable_worker_name(owner, ""),
            "NAMESPACE": str(meta.get("namespace") or ""),
            "SERVICE_NAME": str(meta["name"]),
            "LC_SERVER": self.ctx.config.localController.server,
        }
        if optional_bool(spec.get("kafkaSupport"), "spec.kafkaSupport"):
            env["KAFKA_ENABLED"] = "true"
        param = WorkerParam(
            worker_type=FE_WORKER,
            mounts=[model_mount(self.models, owner, model_name, "spec.model.name", "MODEL_URL")],
            env=env,
        )
        return WorkloadPlan(
            services=(ServiceWant(FE_WORKER, FE_PORT),),
            deployments=(
                DeploymentWant(
                    FE_WORKER, {"replicas": replicas, "template": template}, param, "spec.template"
                ),
            ),
        )

    def decide(
        self, owner: Mapping[str, Any], plan: WorkloadPlan, observed: Observed
    ) -> StatusDecision:
        """The family's decision; ``active``/``failed`` count pods, as Sedna's do."""
        base = super().decide(owner, plan, observed)
        active = failed = 0
        for dep in observed.deployments.values():
            status = (dep or {}).get("status") or {}
            active += int(status.get("replicas") or 0)
            if base.condition == CONDITION_FAILED:
                wanted = int(((dep or {}).get("spec") or {}).get("replicas") or 1)
                failed += max(wanted - int(status.get("availableReplicas") or 0), 1)
        return dataclasses.replace(base, active=active, failed=failed)
