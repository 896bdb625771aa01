"""The FederatedLearningJob controller: the aggregator, its Service, the training workers.

Sedna parity (pkg/globalmanager/controllers/federatedlearning): one aggregation pod and
the Service `<job>-aggregation` on 7363 in front of it, one training pod per
`spec.trainingWorkers[]` entry, the job sent to the LC of every training node, phases
and Complete/Failed conditions from the pods, the LCs' round reports as Training
conditions and the aggregated model's metrics in the Model's status. These differ from
Sedna's Go GM, on purpose:

1. All state is per job and lives in the API (Sedna issue 466: the aggregator's address,
   the pod selector and the "do not recreate" flag were controller-wide fields that
   concurrent jobs overwrote). Each pod records which worker it is and for which job
   generation (`sedna-gm.io/fl-worker`, `sedna-gm.io/fl-generation`), so a restarted GM
   adopts what exists and creates only what is missing.
2. Self-healing is level-triggered: a missing worker (deleted pod, lost Service) is
   created again on the next sync, from the spec. Sedna re-creates a deep copy of the
   deleted pod from the delete handler, remembered in memory for five seconds, and only
   when the job's pods were not all gone.
3. A changed `generation` deletes the pods made for the older one and creates the new
   set in the sync (Sedna does it in the update handler, racing the sync).
4. Before creating pods the controller lists the job's pods from the server (not the
   cache): a create whose response was lost, or that the cache has not seen yet, is
   never made twice (the runtime's `read_owned_pods`, the look-up `PodCreations` makes
   before a retry). This covers more than remembering lost answers: a sync woken by our
   own status write can run before the pod cache has seen the pods that sync's
   predecessor created. The list is made only when the cache lacks a worker.
   Duplicates of one worker, whatever made them, are deleted.
5. A malformed spec, a missing Model or Dataset and a missing secret get a Warning Event
   and a `Training` condition with status False naming the field; the job waits
   (watching Models and Datasets) instead of failing, so fixing the input resumes it.
6. Round reports are checked, accepted only from the LC of a node a training worker's
   template pins (`nodeName` or the `kubernetes.io/hostname` node selector: the nodes
   the job is sent to), recorded once per round of a training run (every node reports
   each round) and bounded (`maxConditions`); Sedna appends one condition per report
   from anyone, forever. A new aggregation worker (spec rollout, deleted aggregator)
   starts a new run, marked by a `NewTrainingRun` condition: its rounds are recorded
   again from round 1.
7. `Pending` means what Sedna documents (a worker not yet started); Sedna writes
   `Running` from the first sync on.
8. Status-only changes are not re-sent to the LCs, nor is anything at a periodic
   resync (an LC that reconnects gets the job from the message layer's replay); a
   worker moved off a node gets the job deleted there, and deletes that arrive as
   tombstones still reach every LC.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loguru import logger

from sedna.runtime import (
    DATASETS,
    MODELS,
    PODS,
    SERVICES,
    ApiError,
    Controller,
    ControllerContext,
    DeletedFinalStateUnknown,
    NotFound,
    Observed,
    ResourceEventHandlerFuncs,
    Result,
    ServiceWant,
    UpstreamMessage,
    WorkerError,
    WorkerParam,
    WorkloadConflict,
    WriteEchoes,
    convert_map_to_metrics,
    ensure_service,
    job_selector,
    meta_namespace_key,
    read_owned_pods,
    sedna_resource,
    split_key,
    update_status_with_retry,
)

from . import status as S
from .plugin import Options
from .spec import (
    API_VERSION,
    KIND,
    JobSpec,
    SpecError,
    StorageRef,
    TrainingWorker,
    job_spec,
    storage_ref,
    training_nodes,
)
from .upstream import ReportError, parse_report
from .workers import (
    AGG_PORT,
    AGGREGATION_WORKER,
    Inputs,
    JobInfo,
    aggregation_param,
    training_param,
)

FEDERATED_LEARNING_JOBS = sedna_resource("federatedlearningjobs")
WORKER_ANNOTATION = "sedna-gm.io/fl-worker"
GENERATION_ANNOTATION = "sedna-gm.io/fl-generation"
AGGREGATOR_SLOT = "aggregation"
INSERT = "insert"
DELETE = "delete"

Obj = Mapping[str, Any]


class _Blocked(Exception):
    """The job cannot go on until its input changes (watched): reported, not retried."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class _Retry(_Blocked):
    """A failure that may heal by itself (missing secret, API error): retried with backoff."""


class _Conflict(_Blocked):
    """A foreign object holds a name the job needs: looked at again every
    ``CONFLICT_RECHECK_SECONDS``, as the label-scoped cache does not show it go."""


# a foreign Service of the aggregator's name costs one create and one get per recheck
CONFLICT_RECHECK_SECONDS = 5.0


def _meta(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _name(obj: Obj) -> str:
    meta = _meta(obj)
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def _typed(obj: Obj) -> dict[str, Any]:
    """The job with kind and apiVersion (list responses carry neither); a shallow copy,
    so nothing below the top level may be changed."""
    job = dict(obj)
    job["kind"] = KIND
    job.setdefault("apiVersion", API_VERSION)
    return job


def _slot_of_worker(worker: TrainingWorker) -> str:
    return f"training-{worker.index}"


def _deleting(pod: Obj) -> bool:
    return bool(_meta(pod).get("deletionTimestamp"))


def _keep_order(pod: Obj) -> tuple[bool, str, str]:
    """Of two pods for one worker the one that started is kept, else the older."""
    meta = _meta(pod)
    started = S.pod_phase(pod) != S.PENDING
    return not started, str(meta.get("creationTimestamp") or ""), str(meta.get("name") or "")


@dataclass
class _Assignment:
    """The job's live pods sorted out: the one pod of each worker, and the rest."""

    by_slot: dict[str, Obj] = field(default_factory=dict)
    surplus: list[Obj] = field(default_factory=list)  # older generation or duplicates
    adopted: dict[str, Obj] = field(default_factory=dict)  # unmarked pods taken, by slot


def assign(pods: Sequence[Obj], spec: JobSpec, generation: str, worker_label: str) -> _Assignment:
    """Which pod is which worker of the current generation.

    Pods without our annotations (made by Sedna's Go GM) are adopted: the aggregator by
    its worker-type label, training pods into the free training slots in creation order.
    Of two pods for one worker the one that started is kept, else the older.
    """
    slots = {AGGREGATOR_SLOT} | {_slot_of_worker(w) for w in spec.training}
    out = _Assignment()
    unmarked: list[Obj] = []
    for pod in sorted(pods, key=_keep_order):
        if _deleting(pod):
            continue
        ann = _meta(pod).get("annotations") or {}
        slot = ann.get(WORKER_ANNOTATION)
        if slot is None:
            unmarked.append(pod)
            continue
        stale = ann.get(GENERATION_ANNOTATION) != generation or slot not in slots
        if stale or slot in out.by_slot:
            out.surplus.append(pod)
        else:
            out.by_slot[slot] = pod
    free = [_slot_of_worker(w) for w in spec.training if _slot_of_worker(w) not in out.by_slot]
    for pod in unmarked:
        wtype = str((_meta(pod).get("labels") or {}).get(worker_label) or "")
        if wtype == AGGREGATION_WORKER.lower() and AGGREGATOR_SLOT not in out.by_slot:
            slot = AGGREGATOR_SLOT
        elif wtype != AGGREGATION_WORKER.lower() and free:
            slot = free.pop(0)
        else:
            out.surplus.append(pod)
            continue
        out.by_slot[slot] = out.adopted[slot] = pod
    return out


class FederatedLearningController(Controller):
    """One per GM; `start`/`stop` are what the manager calls."""

    def __init__(self, ctx: ControllerContext) -> None:
        opts = ctx.options
        self.options = opts if isinstance(opts, Options) else Options.model_validate(opts or {})
        super().__init__(
            KIND,
            workers=ctx.workers,
            metrics=ctx.metrics,
            clock=ctx.clock,
            # an unexpected failure of a sync is a Warning Event on the job, not only a log
            events=ctx.events,
            informer=ctx.informers.informer(FEDERATED_LEARNING_JOBS),
        )
        self.ctx = ctx
        self.jobs_client = ctx.kube.resource(FEDERATED_LEARNING_JOBS)
        self.pods_client = ctx.kube.resource(PODS)
        self.services_client = ctx.kube.resource(SERVICES)
        self.models_client = ctx.kube.resource(MODELS)
        self.jobs = ctx.informers.informer(FEDERATED_LEARNING_JOBS)
        self.pods = ctx.informers.worker_pods(FEDERATED_LEARNING_JOBS)
        # only Services labelled for federated learning jobs: foreign ones are not cached
        self.services = ctx.informers.owned_by_kind(SERVICES, FEDERATED_LEARNING_JOBS)
        self.models = ctx.informers.informer(MODELS)
        self.datasets = ctx.informers.informer(DATASETS)
        self.worker_label = f"{KIND.lower()}.sedna.io/worker-type"
        # the versions our syncs wrote: their watch events wake no second sync
        self.echoes = WriteEchoes()
        # UIDs of jobs this process made workers for while their cached copy had no
        # status: the cache may lack those workers (dropped once a cached copy shows a
        # status, or at the job's delete: bounded by the jobs)
        self._unconfirmed: set[str] = set()
        self._unconfirmed_lock = threading.Lock()
        self.jobs.add_event_handler(
            ResourceEventHandlerFuncs(
                add=self._job_added, update=self._job_updated, delete=self._job_deleted
            )
        )
        owned = ResourceEventHandlerFuncs(
            add=self._owned_added,
            update=self._owned_updated,
            delete=self._owned_deleted,
        )
        self.pods.add_event_handler(owned)
        self.services.add_event_handler(
            ResourceEventHandlerFuncs(
                add=self._service_added,
                update=self._service_updated,
                delete=self._service_deleted,
            )
        )
        for informer in (self.models, self.datasets):
            informer.add_event_handler(
                ResourceEventHandlerFuncs(
                    add=self._input_changed,
                    update=self._input_updated,
                )
            )
        ctx.upstream.register(KIND, self.handle_report)

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        self.run()

    def stop(self, drain: bool = False, timeout: float | None = 10.0) -> None:
        super().stop(drain=drain, timeout=timeout)

    # -- event handlers (informer threads: enqueue and downstream only) --------------

    def _enqueue_obj(self, obj: Obj) -> None:
        try:
            self.enqueue(meta_namespace_key(obj))
        except ValueError as exc:
            logger.warning("{}: cannot enqueue an object without a name: {}", KIND, exc)

    def _job_added(self, obj: Obj) -> None:
        self._enqueue_obj(obj)
        self._send(INSERT, obj, training_nodes(obj))

    def _job_updated(self, old: Obj, new: Obj) -> None:
        if not (_rv(old) != _rv(new) and self.echoes.is_echo(new)):
            self._enqueue_obj(new)  # (the status our sync wrote wakes no other)
        if not _edge_relevant_change(old, new):
            # a resync or a status write: the LCs have the job since it last changed,
            # and one that reconnects gets it replayed by the message layer
            return
        nodes = training_nodes(new)
        self._send(INSERT, new, nodes)
        self._send(DELETE, new, training_nodes(old) - nodes)

    def _job_deleted(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        job = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        self.enqueue(meta_namespace_key(obj))
        if isinstance(job, Mapping):
            self.echoes.forget(job)
            self._forget(job)
            self._send(DELETE, job, training_nodes(job))

    def _owner_key(self, obj: Obj) -> str | None:
        """The key of the job that controls `obj` (kind and UID checked), else None."""
        meta = _meta(obj)
        for ref in meta.get("ownerReferences") or []:
            if not isinstance(ref, Mapping) or not ref.get("controller"):
                continue
            if ref.get("kind") != KIND:
                return None
            ns = str(meta.get("namespace") or "")
            job = self.jobs.lister.get(ns, str(ref.get("name") or ""))
            if job is None or _meta(job).get("uid") != ref.get("uid"):
                return None
            return f"{ns}/{ref.get('name')}"
        return None

    def _owned_changed(self, obj: Obj) -> None:
        key = self._owner_key(obj)
        if key is not None:
            self.enqueue(key)

    def _owned_added(self, obj: Obj) -> None:
        if not self.echoes.is_echo(obj):  # a worker our sync made wakes no other
            self._owned_changed(obj)

    def _owned_updated(self, old: Obj, new: Obj) -> None:
        if _rv(old) != _rv(new) and self.echoes.is_echo(new):
            return
        self._owned_changed(new)

    def _owned_deleted(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        owned = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if isinstance(owned, Mapping):
            self.echoes.forget(owned)
            self._owned_changed(owned)

    def _service_added(self, service: Obj) -> None:
        if not self.echoes.is_echo(service):
            self._service_changed(service)

    def _service_updated(self, old: Obj, new: Obj) -> None:
        if _rv(old) != _rv(new) and self.echoes.is_echo(new):
            return
        self._service_changed(new)

    def _service_changed(self, service: Obj) -> None:
        """Ours wake their job; another of the aggregator's name wakes the job it blocks
        (only one labelled for these jobs is cached: an unlabelled one is rechecked)."""
        key = self._owner_key(service)
        if key is None:
            meta = _meta(service)
            name = str(meta.get("name") or "")
            suffix = f"-{AGGREGATION_WORKER.lower()}"
            ns = str(meta.get("namespace") or "")
            if name.endswith(suffix) and self.jobs.lister.get(ns, name[: -len(suffix)]):
                key = f"{ns}/{name[: -len(suffix)]}"
        if key is not None:
            self.enqueue(key)

    def _service_deleted(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        service = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if isinstance(service, Mapping):
            self.echoes.forget(service)
            self._service_changed(service)

    def _input_changed(self, obj: Obj) -> None:
        """A Model or Dataset appeared or changed: wake the unfinished jobs that name it."""
        meta = _meta(obj)
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        for job in self.jobs.lister.list(ns):
            if not S.is_finished(job) and name in _input_names(job):
                self._enqueue_obj(job)

    def _input_updated(self, old: Obj, new: Obj) -> None:
        # our own metric writes change only a Model's status
        if old.get("spec") != new.get("spec"):
            self._input_changed(new)

    # -- downstream ------------------------------------------------------------------

    def _send(self, operation: str, job: Obj, nodes: set[str]) -> None:
        if not nodes:
            return
        obj = _typed(job)
        for node in sorted(nodes):
            try:
                self.ctx.send(node, operation, obj)
            except Exception as exc:  # an informer thread must never die of a transport
                logger.warning(
                    "downstream: cannot send {} {} to node {} ({}): {}",
                    KIND, _name(job), node, operation, exc,
                )  # fmt: skip

    # -- upstream (upstream handler thread) ------------------------------------------

    def handle_report(self, msg: UpstreamMessage) -> None:
        """An LC's report: a new round becomes a Training condition, metrics the Model's."""
        where = f"report from node {msg.node_name} for {KIND} {msg.namespace}/{msg.name}"
        if msg.operation != "status":
            logger.warning("{}: operation {!r} ignored (only status)", where, msg.operation)
            return
        try:
            cached = self.jobs.get_or_read(msg.namespace, msg.name)
        except ApiError as exc:
            logger.error("{}: cannot read the job: {}", where, exc)
            return
        if cached is None:
            logger.warning("{}: no such job, report ignored", where)
            return
        if msg.node_name not in training_nodes(cached):
            logger.warning("{}: not a training node of the job, report ignored", where)
            return
        try:
            report = parse_report(msg.content)
        except ReportError as exc:
            logger.warning("{}: invalid report: content.{}: {}", where, exc.field, exc.reason)
            self.ctx.events.warning(
                _typed(cached),
                "InvalidReport",
                f"LC on node {msg.node_name} sent an invalid report: content.{exc.field}: "
                f"{exc.reason}",
            )
            return
        if report.metrics:
            self._write_model_metrics(cached, report.metrics, msg.node_name, where)
        if report.current_round > 0:
            self._record_round(cached, report.current_round, report.update_time, msg, where)

    def _record_round(
        self, job: Obj, current_round: int, update_time: str, msg: UpstreamMessage, where: str
    ) -> None:
        """A Training condition for a round above the highest of the current run.

        Every training node reports every round, in any interleaving (one node's round 3
        may arrive after another's round 4): a round is recorded once, by the first
        report above what the run has recorded. The run is what follows the latest
        `NewTrainingRun` condition, appended before a new aggregation worker is made
        (`_start_run`): that worker counts from round 1, and comparing with the highest
        round of the whole history would drop its rounds until they passed the old
        maximum. Deduplicating by "equals the latest recorded round" is not enough: a
        late report of an older round would be recorded again. Sedna records every
        report, duplicates included.
        """
        when = update_time or self._now()
        cond = S.new_condition(
            S.TRAINING, self._now(), S.ROUND_REASON, S.round_message(current_round, when)
        )

        def mutate(fresh: dict[str, Any]) -> bool:
            if S.latest_round(fresh) >= current_round:
                return False  # another training node reported this round already
            conds = S.conditions(fresh)
            S.append_bounded(conds, cond, self.options.maxConditions)
            fresh.setdefault("status", {})["conditions"] = conds
            return True

        try:
            before = S.latest_round(job)
            written = update_status_with_retry(
                self.jobs_client, msg.namespace, msg.name, mutate, current=job
            )
        except NotFound:
            logger.warning("{}: job deleted meanwhile, report dropped", where)
            return
        except ApiError as exc:
            logger.error("{}: cannot write the round: {}", where, exc)
            return
        if S.latest_round(written) == current_round > before:
            logger.info(
                "federated learning job {}/{}: round {} reached at {} | reported by LC on node {}",
                msg.namespace, msg.name, current_round, when, msg.node_name,
            )  # fmt: skip

    def _write_model_metrics(
        self, job: Obj, metrics: Mapping[str, Any], node: str, where: str
    ) -> None:
        spec = job.get("spec")
        agg = spec.get("aggregationWorker") if isinstance(spec, Mapping) else None
        model = agg.get("model") if isinstance(agg, Mapping) else None
        name = model.get("name") if isinstance(model, Mapping) else None
        if not isinstance(name, str) or not name:
            logger.warning("{}: the job names no aggregation model, metrics dropped", where)
            return
        ns = str(_meta(job).get("namespace") or "")
        try:
            values = convert_map_to_metrics(metrics)
        except (TypeError, ValueError) as exc:
            logger.warning("{}: invalid report: content.output.models[0].metrics: {}", where, exc)
            return
        now = self._now()

        changed = False

        def mutate(fresh: dict[str, Any]) -> bool:
            # updateTime says when metrics were last reported, as in Sedna: refreshed by
            # every report with metrics, changed or not (one write per such report)
            nonlocal changed
            status = fresh.setdefault("status", {})
            changed = status.get("metrics") != values
            if not changed and status.get("updateTime") == now:
                return False
            status["metrics"] = values
            status["updateTime"] = now
            return True

        try:
            update_status_with_retry(
                self.models_client, ns, name, mutate, current=self.models.lister.get(ns, name)
            )
            if changed:
                shown = " ".join(f"{m['key']}={m['value']}" for m in values)
                logger.info(
                    "federated learning job {}: Model {} metrics {} | reported by LC on node {}",
                    _name(job), name, shown, node,
                )  # fmt: skip
        except NotFound:
            logger.warning("{}: Model {}/{} not found, metrics dropped", where, ns, name)
        except ApiError as exc:
            logger.error("{}: cannot write the metrics of Model {}/{}: {}", where, ns, name, exc)

    # -- the sync --------------------------------------------------------------------

    def sync(self, key: str) -> Result | None:
        ns, name = split_key(key)
        cached = self.jobs.lister.get(ns, name)
        if cached is None:
            return None  # deleted: the garbage collector removes its pods and Service
        job = _typed(cached)
        if S.is_finished(job):
            return None
        try:
            spec = job_spec(job)
        except SpecError as exc:
            self._blocked(job, "InvalidSpec", str(exc))
            return None
        try:
            self._ensure_service(job)
            pods = self._ensure_pods(job, spec)
        except _Retry as exc:
            self._blocked(job, exc.reason, exc.message)
            return Result(requeue=True)
        except _Conflict as exc:
            self._blocked(job, exc.reason, exc.message)
            return Result(requeue_after=CONFLICT_RECHECK_SECONDS)
        except _Blocked as exc:
            self._blocked(job, exc.reason, exc.message)
            return None
        self._write_status(job, spec, pods)
        return None

    def _now(self) -> str:
        return self.ctx.clock.wall().strftime("%Y-%m-%dT%H:%M:%SZ")

    def _job_info(self, job: Obj) -> JobInfo:
        meta = _meta(job)
        return JobInfo(
            str(meta.get("namespace")),
            str(meta.get("name")),
            self.ctx.config.localController.server,
        )

    def _inputs(self, job: Obj, spec: JobSpec) -> Inputs:
        ns = str(_meta(job).get("namespace"))

        def lookup(informer: Any, kind: str, name: str, field: str) -> StorageRef:
            try:
                obj = informer.get_or_read(ns, name)
            except ApiError as exc:
                raise _Retry(
                    f"{kind}ReadFailed", f"{field}: cannot read {kind} {ns}/{name}: {exc}"
                ) from None
            if obj is None:
                raise _Blocked(f"Missing{kind}", f"{field}: {kind} {ns}/{name} not found")
            try:
                return storage_ref(obj, f"{kind} {ns}/{name}")
            except SpecError as exc:
                raise _Blocked(f"Invalid{kind}", f"{field}: {exc}") from None

        model = lookup(self.models, "Model", spec.model, "spec.aggregationWorker.model.name")
        pretrained = None
        if spec.pretrained_model:
            pretrained = lookup(
                self.models, "Model", spec.pretrained_model, "spec.pretrainedModel.name"
            )
        datasets: dict[str, StorageRef] = {}
        for w in spec.training:
            if w.dataset not in datasets:
                datasets[w.dataset] = lookup(
                    self.datasets, "Dataset", w.dataset, f"{w.field}.dataset.name"
                )
        return Inputs(model, pretrained, datasets)

    def _ensure_service(self, job: Obj) -> None:
        """The aggregator's Service (Sedna's `CreateEdgeMeshService` on 7363), the family's
        way (`ensure_service`): created again whenever it is missing, its spec healed.

        One of that name the job does not control blocks the job: the training workers
        would reach whatever it selects.
        """
        ns = str(_meta(job).get("namespace"))
        name = f"{_meta(job).get('name')}-{AGGREGATION_WORKER}".lower()
        seen = Observed(on_write=self.echoes.record)
        try:
            ensure_service(
                self.services_client,
                self.services,
                job,
                ServiceWant(AGGREGATION_WORKER, AGG_PORT),
                seen,
            )
        except WorkloadConflict:
            raise _Conflict(
                "ServiceConflict",
                f"Service {ns}/{name} exists and is not controlled by this job (the training "
                "workers' AGG_IP would name it)",
            ) from None
        except ApiError as exc:
            raise _Retry(
                "ServiceCreateFailed", f"cannot create Service {ns}/{name}: {exc}"
            ) from None
        for what in seen.created:
            self.ctx.events.normal(job, "SuccessfulCreate", f"Created {what} (port {AGG_PORT})")
        for what in seen.updated:
            self.ctx.events.normal(job, "SuccessfulUpdate", f"Rolled the spec out to {what}")

    def _owned_pods(self, job: Obj, pods: Sequence[Obj]) -> list[Obj]:
        uid = _meta(job).get("uid")
        out = []
        for p in pods:
            refs = _meta(p).get("ownerReferences") or []
            controlled = any(
                isinstance(r, Mapping) and r.get("controller") and r.get("uid") == uid for r in refs
            )
            if controlled and self.worker_label in (_meta(p).get("labels") or {}):
                out.append(p)
        return out

    def _ensure_pods(self, job: Obj, spec: JobSpec) -> dict[str, Obj]:
        """The job's worker of each slot, created where missing.

        The Models and Datasets are looked up only when a worker is to be made, as
        Sedna does: one deleted while the job runs does not stop its status.
        """
        meta = _meta(job)
        ns = str(meta.get("namespace"))
        generation = str(meta.get("generation") or 1)
        cached = self._owned_pods(job, self.pods.lister.by_owner_uid(str(meta.get("uid"))))
        found = assign(cached, spec, generation, self.worker_label)
        self._delete_surplus(job, found.surplus, generation)
        self._mark_adopted(job, found.adopted, generation)
        wanted = [AGGREGATOR_SLOT] + [_slot_of_worker(w) for w in spec.training]
        if all(s in found.by_slot for s in wanted):
            return found.by_slot
        if self._cache_may_lag(job):
            # Something is missing in the cache and a worker made before may not have
            # reached it yet: ask the server before creating anything.
            try:
                listed = read_owned_pods(
                    self.pods_client, ns, str(_meta(job).get("uid") or ""), job_selector(job)
                )
            except ApiError as exc:
                raise _Retry("PodListFailed", f"cannot list the job's pods: {exc}") from None
            live = assign(self._owned_pods(job, listed), spec, generation, self.worker_label)
        else:
            live = found
        already = {_meta(p).get("name") for p in found.surplus}
        self._delete_surplus(
            job, [p for p in live.surplus if _meta(p).get("name") not in already], generation
        )
        self._mark_adopted(
            job, {k: v for k, v in live.adopted.items() if k not in found.adopted}, generation
        )
        info = self._job_info(job)
        inputs: Inputs | None = None
        for slot in wanted:
            if slot in live.by_slot:
                continue
            if inputs is None:
                inputs = self._inputs(job, spec)
            if slot == AGGREGATOR_SLOT:
                self._start_run(job, generation)
                param = aggregation_param(info, spec, inputs)
                template, field = spec.aggregation_template, "spec.aggregationWorker.template"
            else:
                worker = spec.training[int(slot.rpartition("-")[2])]
                param = training_param(info, spec, worker, inputs)
                template, field = worker.template, f"{worker.field}.template"
            live.by_slot[slot] = self._create(job, template, param, field, slot, generation)
        return live.by_slot

    def _cache_may_lag(self, job: Obj) -> bool:
        """Whether the pod cache may lack a worker of `job` that exists.

        A job without a status has had no sync of any GM finish for it, and this process
        has made it no worker: its workers, if any, were made by a GM before this one and
        are in the cache (synced at start). Then the missing ones are simply made: the
        server is not listed for them (one request of the eight a new job cost)."""
        uid = str(_meta(job).get("uid") or "")
        with self._unconfirmed_lock:
            if job.get("status"):
                self._unconfirmed.discard(uid)  # the status decides from here on
                return True
            return uid in self._unconfirmed

    def _forget(self, job: Obj) -> None:
        with self._unconfirmed_lock:
            self._unconfirmed.discard(str(_meta(job).get("uid") or ""))

    def _start_run(self, job: Obj, generation: str) -> None:
        """Before a new aggregation worker is made: mark the start of a training run if
        the run before recorded rounds (the new worker counts from 1 again).

        Written before the pod, so that no report of the new run can precede it; a retry
        after a failed create finds the run empty and writes no second marker.
        """
        cond = S.run_marker(self._now(), generation)

        def mutate(fresh: dict[str, Any]) -> bool:
            if S.latest_round(fresh) == 0:
                return False
            conds = S.conditions(fresh)
            S.append_bounded(conds, cond, self.options.maxConditions)
            fresh.setdefault("status", {})["conditions"] = conds
            return True

        ns, name = split_key(meta_namespace_key(job))
        try:
            update_status_with_retry(self.jobs_client, ns, name, mutate, current=job)
        except ApiError as exc:
            raise _Retry("StatusWriteFailed", f"cannot mark the new training run: {exc}") from None

    def _create(
        self, job: Obj, template: Obj, param: WorkerParam, field: str, slot: str, generation: str
    ) -> Obj:
        marked = dict(template)
        tmeta = dict(_meta(template))
        tmeta["annotations"] = {
            **dict(tmeta.get("annotations") or {}),
            WORKER_ANNOTATION: slot,
            GENERATION_ANNOTATION: generation,
        }
        marked["metadata"] = tmeta
        with self._unconfirmed_lock:
            self._unconfirmed.add(str(_meta(job).get("uid") or ""))
        try:
            pod = self.ctx.worker_runtime.create_pod_with_template(job, marked, param, field=field)
        except WorkerError as exc:
            raise _Retry("WorkerCreateFailed", f"cannot create the {slot} worker: {exc}") from None
        except ApiError as exc:
            raise _Retry(
                "WorkerCreateFailed", f"cannot create the {slot} worker ({field}): {exc}"
            ) from None
        self.echoes.record(pod)
        pod_name = _meta(pod).get("name")
        logger.info(
            "federated learning job {}: created {} worker pod {} (generation {})",
            _name(job), slot, pod_name, generation,
        )  # fmt: skip
        self.ctx.events.normal(job, "SuccessfulCreate", f"Created {slot} worker pod {pod_name}")
        return pod

    def _mark_adopted(self, job: Obj, adopted: Mapping[str, Obj], generation: str) -> None:
        """Annotate pods made by another GM with the worker they now are, so that a later
        spec change replaces them like ours."""
        for slot, pod in adopted.items():
            meta = _meta(pod)
            patch = {
                "metadata": {
                    "annotations": {WORKER_ANNOTATION: slot, GENERATION_ANNOTATION: generation}
                }
            }
            try:
                self.pods_client.patch(str(meta.get("namespace")), str(meta.get("name")), patch)
            except NotFound:
                continue
            except ApiError as exc:
                raise _Retry(
                    "WorkerAdoptFailed", f"cannot adopt pod {meta.get('name')}: {exc}"
                ) from None
            logger.info(
                "federated learning job {}: adopted pod {} as the {} worker",
                _name(job), meta.get("name"), slot,
            )  # fmt: skip

    def _delete_surplus(self, job: Obj, pods: Sequence[Obj], generation: str) -> None:
        for pod in pods:
            meta = _meta(pod)
            pod_name = str(meta.get("name"))
            old = (meta.get("annotations") or {}).get(GENERATION_ANNOTATION)
            why = (
                f"made for generation {old}, the job is at {generation}"
                if old is not None and old != generation
                else "a second pod for one worker"
            )
            with contextlib.suppress(NotFound):
                try:
                    self.pods_client.delete(
                        str(meta.get("namespace")),
                        pod_name,
                        preconditions={"uid": str(meta.get("uid"))},
                    )
                except ApiError as exc:
                    if exc.status == 409:  # a newer pod of that name: not ours to delete
                        continue
                    raise _Retry(
                        "WorkerDeleteFailed", f"cannot delete pod {pod_name}: {exc}"
                    ) from None
            logger.info("federated learning job {}: deleted pod {} ({})", _name(job), pod_name, why)
            self.ctx.events.normal(job, "SuccessfulDelete", f"Deleted pod {pod_name}: {why}")

    # -- status ----------------------------------------------------------------------

    def _blocked(self, job: Obj, reason: str, message: str) -> None:
        """A Training=False condition and a Warning Event, once per distinct problem."""
        cond = S.new_condition(S.TRAINING, self._now(), reason, message, status="False")
        appended = False

        def mutate(fresh: dict[str, Any]) -> bool:
            nonlocal appended
            appended = False  # a 409 retries on a fresh copy: only the written one counts
            status = fresh.setdefault("status", {})
            conds = S.conditions(fresh)
            changed = False
            if not conds or not S.same_condition(conds[-1], cond):
                S.append_bounded(conds, cond, self.options.maxConditions)
                status["conditions"] = conds
                appended = changed = True
            if not status.get("startTime"):
                status["startTime"] = self._now()
                changed = True
            if not status.get("phase"):
                status["phase"] = S.PENDING
                changed = True
            return changed

        ns, name = split_key(meta_namespace_key(job))
        try:
            update_status_with_retry(self.jobs_client, ns, name, mutate, current=job)
        except NotFound:
            return
        if appended:
            logger.warning("federated learning job {}: {}: {}", _name(job), reason, message)
            self.ctx.events.warning(job, reason, message)

    def _write_status(self, job: Obj, spec: JobSpec, pods: Mapping[str, Obj]) -> None:
        current = list(pods.values())
        active, succeeded, failed = S.counts(current)
        desired = 1 + len(spec.training)
        now = self._now()
        outcome: dict[str, str] = {}

        def mutate(fresh: dict[str, Any]) -> bool:
            outcome.clear()
            if S.is_finished(fresh):
                return False
            status = fresh.setdefault("status", {})
            before = dict(status)
            conds = S.conditions(fresh)
            if failed:
                names = sorted(
                    str(_meta(p).get("name")) for p in current if S.pod_phase(p) == "Failed"
                )
                message = f"the worker of FederatedLearningJob failed: pod {', '.join(names)}"
                S.append_bounded(
                    conds,
                    S.new_condition(S.FAILED, now, "workerFailed", message),
                    self.options.maxConditions,
                )
                phase = S.PHASE_FAILED
                outcome.update(type="Warning", reason="workerFailed", message=message)
            elif succeeded and not active and len(current) == desired:
                S.append_bounded(
                    conds, S.new_condition(S.COMPLETE, now), self.options.maxConditions
                )
                status["completionTime"] = now
                phase = S.SUCCEEDED
                outcome.update(
                    type="Normal", reason="Completed", message="FederatedLearningJob completed"
                )
            else:
                phase = S.phase_of(current, desired)
            if conds:
                status["conditions"] = conds
            status.setdefault("startTime", now)
            status.update(active=active, succeeded=succeeded, failed=failed, phase=phase)
            if status == before:
                return False
            outcome["from"] = str(before.get("phase") or "-")
            outcome["to"] = phase
            return True

        ns, name = split_key(meta_namespace_key(job))
        try:
            written = update_status_with_retry(self.jobs_client, ns, name, mutate, current=job)
        except NotFound:
            return
        self.echoes.record_status_write(written, job)
        if not outcome or outcome.get("from") == outcome.get("to"):
            return
        logger.info(
            "federated learning job {}: phase {} -> {} | active {} succeeded {} failed {}",
            _name(job), outcome["from"], outcome["to"], active, succeeded, failed,
        )  # fmt: skip
        if "reason" in outcome:
            self.ctx.events.event(job, outcome["type"], outcome["reason"], outcome["message"])
        elif outcome["from"] == "-" and outcome["to"] == S.PENDING:
            pass  # a new job's first phase: its workers' SuccessfulCreate Events say it
        else:
            self.ctx.events.normal(
                job, outcome["to"], f"phase {outcome['from']} -> {outcome['to']}"
            )


def _rv(obj: Obj) -> object:
    return _meta(obj).get("resourceVersion")


def _edge_relevant_change(old: Obj, new: Obj) -> bool:
    """What a Go LC stores of a job: its metadata (labels, annotations) and spec."""
    if old.get("spec") != new.get("spec"):
        return True
    o, n = _meta(old), _meta(new)
    return any(o.get(k) != n.get(k) for k in ("labels", "annotations", "generation"))


def _input_names(job: Obj) -> set[str]:
    """The Models and Datasets a job names, read leniently (any may be malformed)."""
    names: set[str] = set()
    spec = job.get("spec")
    if not isinstance(spec, Mapping):
        return names

    def name_of(ref: Any) -> None:
        if isinstance(ref, Mapping) and isinstance(ref.get("name"), str):
            names.add(ref["name"])

    agg = spec.get("aggregationWorker")
    if isinstance(agg, Mapping):
        name_of(agg.get("model"))
    name_of(spec.get("pretrainedModel"))
    for w in (
        spec.get("trainingWorkers") or [] if isinstance(spec.get("trainingWorkers"), list) else []
    ):
        if isinstance(w, Mapping):
            name_of(w.get("dataset"))
    return names
