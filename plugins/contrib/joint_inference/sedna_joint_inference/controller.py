"""The JointInferenceService controller, on the runtime's owned-workload family.

Sedna parity (pkg/globalmanager/controllers/jointinference): a cloud Deployment
``<name>-deployment-cloud`` with ``BIG_MODEL_BIND_PORT=5000``, the EdgeMesh Service
``<name>-cloud`` on 5000 in front of it, an edge Deployment ``<name>-deployment-edge``
with ``BIG_MODEL_IP``/``BIG_MODEL_PORT`` pointing at that Service, ``HEM_NAME``,
``HEM_PARAMETERS`` (the parameters as Go's JSON) and ``LC_SERVER``; both get
``NAMESPACE``, ``SERVICE_NAME``, ``WORKER_NAME`` and the model through the storage
initializer as ``MODEL_URL``; ``hpa-<deployment>`` per worker with an ``hpa``. The
service goes to the LC of ``spec.edgeWorker.template.spec.nodeName``; the LC's
metrics land in ``status.metrics``; conditions Pending/Running/Failed with
``active``/``failed``.

Differences from Sedna, on purpose:

1. No spurious Failed before the Deployments are available (Sedna issue 234): a
   Deployment fails only when its controller says so (see the runtime's
   ``deployment_health``); until then the service is Pending.
2. Adds and updates go to the LC as ``insert`` (Sedna's GM sends ``update`` on a
   change, which its LC rejects as an unknown operation); a service whose edge node
   changes is deleted on the old node's LC. Status-only changes are not re-sent, nor
   is anything at a periodic resync (Sedna re-sends every service then): an LC that
   reconnects gets the service from the message layer's replay.
3. Self-healing finds the service by the Deployment's controller reference (Sedna
   splits the Deployment's name at ``-deployment``), and heals Services and HPAs too.
4. Every spec change is rolled out, on every path (Sedna only on the informer's update
   event, so a GM restart or a failed write lost it), and an HPA removed from the
   spec is deleted.
5. ``WORKER_NAME`` is ``<type>worker-<5 chars>`` derived from the service's UID rather
   than random, so a reconcile never changes the template by itself.
6. A missing Model is ``Pending`` (reason ``ModelNotFound``) with an Event, and the
   service is synced when the Model appears; Sedna fails the service for good.
7. A malformed spec gets a Warning Event and a condition naming the field; a malformed
   LC report is rejected with a log line naming node, kind and name (and an Event).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loguru import logger

from sedna.runtime import (
    MODELS,
    ApiError,
    ControllerContext,
    DeletedFinalStateUnknown,
    DeploymentWant,
    HPAWant,
    NotFound,
    ResourceEventHandlerFuncs,
    ServiceWant,
    UpstreamMessage,
    WorkerParam,
    WorkloadController,
    WorkloadPlan,
    enqueue_on_model,
    go_json,
    job_ref,
    model_mount,
    sedna_resource,
    service_host,
    stable_worker_name,
    update_status_with_retry,
)

from .report import ReportError, metrics_from_report
from .spec import CLOUD, EDGE, JointInferenceSpec, WorkerSpec, edge_node, parse_spec

KIND = "JointInferenceService"
JOINT_INFERENCE_SERVICES = sedna_resource("jointinferenceservices")
BIG_MODEL_PORT = 5000

REASON_NO_NODE = "MissingNodeName"
REASON_BAD_REPORT = "InvalidReport"

Obj = Mapping[str, Any]


def worker_name(owner: Obj, worker_type: str) -> str:
    """Sedna's ``<type>worker-<5 random>``, the 5 characters derived from the UID
    (`stable_worker_name`, as every family kind does)."""
    return stable_worker_name(owner, f"{worker_type.lower()}worker-")


def _model_names(owner: Obj) -> set[str]:
    """The Models the service names (read leniently: the spec may be malformed)."""
    spec = owner.get("spec")
    names: set[str] = set()
    for w in ("cloudWorker", "edgeWorker"):
        worker = spec.get(w) if isinstance(spec, Mapping) else None
        model = worker.get("model") if isinstance(worker, Mapping) else None
        name = model.get("name") if isinstance(model, Mapping) else None
        if isinstance(name, str) and name:
            names.add(name)
    return names


def _edge_relevant_change(old: Obj, new: Obj) -> bool:
    """What a Go LC stores of a service: its metadata (labels, annotations) and spec."""
    if old.get("spec") != new.get("spec"):
        return True
    o, n = old.get("metadata") or {}, new.get("metadata") or {}
    return any(o.get(k) != n.get(k) for k in ("labels", "annotations"))


def _name(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


class JointInferenceController(WorkloadController):
    """One per GM; the manager calls `start`/`stop`."""

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx, JOINT_INFERENCE_SERVICES, label="joint inference service")
        self.lc_server = ctx.config.localController.server
        self.models = ctx.informers.informer(MODELS)
        enqueue_on_model(self.models, self.owners, _model_names, self.enqueue)
        self.owners.add_event_handler(
            ResourceEventHandlerFuncs(add=self._added, update=self._updated, delete=self._deleted)
        )
        ctx.upstream.register(KIND, self.handle_report)

    # -- the plan ----------------------------------------------------------------------

    def plan(self, owner: Obj) -> WorkloadPlan:
        spec = parse_spec(owner)
        ref = job_ref(owner)
        service = ServiceWant(CLOUD, BIG_MODEL_PORT)
        host = service_host(owner, CLOUD)
        cloud = self._param(owner, spec.cloud, CLOUD, {"BIG_MODEL_BIND_PORT": str(BIG_MODEL_PORT)})
        edge = self._param(
            owner,
            spec.edge,
            EDGE,
            {
                "BIG_MODEL_IP": host,
                "BIG_MODEL_PORT": str(BIG_MODEL_PORT),
                "HEM_NAME": spec.hem_name,
                "HEM_PARAMETERS": go_json(spec.hem_parameters),
                "LC_SERVER": self.lc_server,
            },
        )
        deployments = (
            DeploymentWant(
                CLOUD, {"template": spec.cloud.template}, cloud, f"{spec.cloud.field}.template"
            ),
            DeploymentWant(
                EDGE, {"template": spec.edge.template}, edge, f"{spec.edge.field}.template"
            ),
        )
        hpas = tuple(
            HPAWant(f"{ref.name}-deployment-{wtype.lower()}", wtype, worker.hpa)
            for wtype, worker in ((CLOUD, spec.cloud), (EDGE, spec.edge))
            if worker.hpa is not None
        )
        return WorkloadPlan(deployments=deployments, services=(service,), hpas=hpas)

    def _param(
        self, owner: Obj, worker: WorkerSpec, worker_type: str, env: dict[str, str]
    ) -> WorkerParam:
        ref = job_ref(owner)
        field = f"{worker.field}.model.name"
        env = dict(env)
        env["NAMESPACE"] = ref.namespace
        env["SERVICE_NAME"] = ref.name
        env["WORKER_NAME"] = worker_name(owner, worker_type)
        mount = model_mount(self.models, owner, worker.model, field, "MODEL_URL")
        return WorkerParam(worker_type=worker_type, mounts=[mount], env=env)

    # -- downstream (informer thread) ------------------------------------------------

    def _added(self, obj: Obj) -> None:
        self._send_insert(None, obj, report=True)

    def _updated(self, old: Obj, new: Obj) -> None:
        """Only what the LC keeps of a service (spec, labels, annotations) is sent again.

        A periodic resync sends nothing: the LC has the service since it last changed,
        and an LC that reconnects gets it replayed by the message layer. (Resending it
        then gave the LC a payload differing only in status and resourceVersion.)
        """
        if not _edge_relevant_change(old, new):
            return  # a resync, or a status write (ours, or the metrics)
        self._send_insert(old, new, report=True)

    def _deleted(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        svc = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        node = edge_node(svc)
        if node:
            self._send(node, "delete", svc)

    def _send_insert(self, old: Obj | None, new: Obj, *, report: bool) -> None:
        node = edge_node(new)
        previous = edge_node(old) if old is not None else ""
        if previous and previous != node:
            self._send(previous, "delete", old or new)
        if not node:
            message = (
                "spec.edgeWorker.template.spec.nodeName is empty: the service is sent to no LC"
            )
            if report:
                logger.warning("{} {}: {}", KIND, _name(new), message)
                self.ctx.events.warning(self.with_type(new), REASON_NO_NODE, message)
            return
        self._send(node, "insert", new)

    def _send(self, node: str, operation: str, obj: Obj) -> None:
        try:
            self.ctx.send(node, operation, self.with_type(obj))
        except Exception as exc:  # an informer thread must never die of a transport error
            logger.warning(
                "downstream: cannot send {} {} to node {} ({}): {}",
                KIND, _name(obj), node, operation, exc,
            )  # fmt: skip

    # -- upstream (upstream handler thread) ------------------------------------------

    def handle_report(self, msg: UpstreamMessage) -> None:
        """The edge worker's metrics, via its LC, into `status.metrics`."""
        where = f"report from node {msg.node_name} for {KIND} {msg.namespace}/{msg.name}"
        if msg.operation != "status":
            logger.warning("{}: operation {!r} ignored (only status)", where, msg.operation)
            return
        try:
            cached = self.owners.get_or_read(msg.namespace, msg.name)
        except ApiError as exc:
            logger.error("{}: cannot read the service: {}", where, exc)
            return
        if cached is None:
            logger.warning("{}: no such service, report ignored", where)
            return
        node = edge_node(cached)
        if node != msg.node_name:
            logger.warning("{}: the edge worker is on node {!r}, report ignored", where, node)
            return
        try:
            metrics = metrics_from_report(msg.content)
        except ReportError as exc:
            logger.warning("{}: invalid report: {}: {}", where, exc.field, exc.reason)
            self.ctx.events.warning(
                self.with_type(cached),
                REASON_BAD_REPORT,
                f"LC on node {msg.node_name} sent an invalid report: {exc.field}: {exc.reason}",
            )
            return
        if metrics is None:
            logger.warning("{}: empty status info, nothing to record", where)
            return

        def mutate(fresh: dict[str, Any]) -> bool:
            status = dict(fresh.get("status") or {})
            if status.get("metrics") == metrics:
                return False
            status["metrics"] = metrics
            fresh["status"] = status
            return True

        try:
            update_status_with_retry(self.api, msg.namespace, msg.name, mutate, current=cached)
        except NotFound:
            logger.warning("{}: service deleted meanwhile, report dropped", where)
        except ApiError as exc:
            logger.error("{}: cannot write the reported metrics: {}", where, exc)


__all__ = ["JointInferenceController", "JointInferenceSpec", "worker_name"]
