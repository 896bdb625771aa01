"""The VideoAnalyticsJob controller: one worker pod and its Service, job-style status.

Sedna parity (pkg/globalmanager/controllers/videoanalytics): a pod from
``spec.template`` (generateName ``<job>-videoanalytics-``), worker type
``videoanalytics``, the Model of ``spec.model.name`` fetched into ``MODEL_URL`` by the
storage initializer, env ``WORKER_NAME``, ``JOB_NAME``, ``NAMESPACE``, ``MODEL_NAME``,
``LC_SERVER`` and ``KAFKA_ENABLED`` (only with ``kafkaSupport``), the template's
``restartPolicy``; the EdgeMesh Service ``<job>-videoanalytics`` on port 4000. Status
as ReidJob's: ``startTime``, ``active``, ``succeeded``, ``failed``, ``phase``,
``Completed``/``Failed`` conditions, ``completionTime``.

Sedna's faults, fixed: its upstream handler parses the workers' reports and drops them
(here the owner info goes to the latest condition's ``data``, from the LC of the
worker's node only); a missing Model leaves Sedna's job in phase ``Running`` with no
worker, retried (here ``Pending`` with ``ModelNotFound`` until the Model appears). A
Model deleted once the worker exists changes nothing, as in Sedna: the job follows its
worker (`PodWorkloadController` keeps bare pods as they are when a plan cannot be made).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sedna.runtime import (
    MODELS,
    ControllerContext,
    PodWant,
    PodWorkloadController,
    ServiceWant,
    WorkerParam,
    WorkerReports,
    WorkloadPlan,
    checked_template,
    enqueue_on_model,
    model_mount,
    optional_bool,
    record_in_latest_condition,
    require_mapping,
    require_str,
    sedna_resource,
    stable_worker_name,
)

RESOURCE = sedna_resource("videoanalyticsjobs")
VIDEO_ANALYTICS_WORKER = "videoanalytics"
VIDEO_ANALYTICS_PORT = 4000


def _model_name(owner: Mapping[str, Any]) -> str | None:
    model = (owner.get("spec") or {}).get("model")
    name = model.get("name") if isinstance(model, Mapping) else None
    return name if isinstance(name, str) else None


class VideoAnalyticsJobController(PodWorkloadController):
    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx, RESOURCE, label="video analytics job", job_style=True)
        self.models = ctx.informers.informer(MODELS)
        enqueue_on_model(self.models, self.owners, _model_name, self.enqueue)
        self.reports = WorkerReports(
            ctx,
            RESOURCE,
            self.owners,
            ctx.informers.worker_pods(RESOURCE),
            record_in_latest_condition,
        )

    def plan(self, owner: Mapping[str, Any]) -> WorkloadPlan:
        spec = require_mapping(owner.get("spec"), "spec")
        meta = owner["metadata"]
        template = checked_template(spec.get("template"), "spec.template")
        model = require_mapping(spec.get("model"), "spec.model")
        model_name = require_str(model.get("name"), "spec.model.name")
        env = {
            "WORKER_NAME": stable_worker_name(owner, ""),
            "JOB_NAME": str(meta["name"]),
            "NAMESPACE": str(meta.get("namespace") or ""),
            "MODEL_NAME": model_name,
            "LC_SERVER": self.ctx.config.localController.server,
        }
        if optional_bool(spec.get("kafkaSupport"), "spec.kafkaSupport"):
            env["KAFKA_ENABLED"] = "true"
        param = WorkerParam(
            worker_type=VIDEO_ANALYTICS_WORKER,
            mounts=[model_mount(self.models, owner, model_name, "spec.model.name", "MODEL_URL")],
            env=env,
            restart_policy=str((template.get("spec") or {}).get("restartPolicy") or ""),
        )
        want = PodWant(
            VIDEO_ANALYTICS_WORKER, VIDEO_ANALYTICS_WORKER, template, param, "spec.template"
        )
        return WorkloadPlan(
            services=(ServiceWant(VIDEO_ANALYTICS_WORKER, VIDEO_ANALYTICS_PORT),),
            pods=(want,),
        )
