"""The ReidJob controller: one ReID worker pod, job-style status, LC reports kept.

Sedna parity (pkg/globalmanager/controllers/reid): a pod from ``spec.template``
(generateName ``<job>-reid-``), worker type ``reid``, env ``WORKER_NAME``,
``JOB_NAME``, ``NAMESPACE``, ``LC_SERVER`` and ``KAFKA_ENABLED`` (only with
``kafkaSupport``), the template's ``restartPolicy``; no Service (Sedna's ``ReidPort``
is never used). Status: ``startTime``, ``active``, ``succeeded``, ``failed``,
``phase`` (Pending, Running, Succeeded, Failed), conditions ``Completed``/``Failed`` and
``completionTime`` (`job_decision`).

Sedna's fault, fixed: its upstream handler parses the workers' reports and drops them;
here the report's owner info is kept in the latest condition's ``data``
(`record_in_latest_condition`), from the LC of the worker's node only. Also: a worker
pod deleted before it ended is made again (Sedna does so too, by accident of listing
no pods) and never twice (expectations).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sedna.runtime import (
    ControllerContext,
    PodWant,
    PodWorkloadController,
    WorkerParam,
    WorkerReports,
    WorkloadPlan,
    checked_template,
    optional_bool,
    record_in_latest_condition,
    require_mapping,
    sedna_resource,
    stable_worker_name,
)

RESOURCE = sedna_resource("reidjobs")
REID_WORKER = "reid"


class ReidJobController(PodWorkloadController):
    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx, RESOURCE, label="reid job", job_style=True)
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
        env = {
            "WORKER_NAME": stable_worker_name(owner, ""),
            "JOB_NAME": str(meta["name"]),
            "NAMESPACE": str(meta.get("namespace") or ""),
            "LC_SERVER": self.ctx.config.localController.server,
        }
        if optional_bool(spec.get("kafkaSupport"), "spec.kafkaSupport"):
            env["KAFKA_ENABLED"] = "true"
        param = WorkerParam(
            worker_type=REID_WORKER,
            env=env,
            restart_policy=str((template.get("spec") or {}).get("restartPolicy") or ""),
        )
        return WorkloadPlan(
            pods=(PodWant(REID_WORKER, REID_WORKER, template, param, "spec.template"),)
        )
