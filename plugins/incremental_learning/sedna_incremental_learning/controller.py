"""The IncrementalLearningJob controller: watches, the stage machine, downstream, upstream.

Sedna parity (pkg/globalmanager/controllers/incrementallearning) with these fixes:

1. A failed inference-worker creation on first sync is reported (Event) and retried
   with backoff; Sedna returns "done" and never looks at the job again.
2. Secret look-up errors for the inference worker are reported on the job; Sedna
   ignores them and creates a pod without credentials.
3. A stage's pod is found by the worker-type label and the pod name recorded in the
   stage's condition, not by splitting the pod name on '-'; only pods the job controls
   (controller owner reference, as client-go controllers count) are its workers, looked
   up in the pod cache's owner index rather than by scanning the namespace.
4. Conditions are bounded (`maxConditions`), keeping the latest of each stage.
5. A job whose stages keep failing goes back to Train only after an exponential
   backoff (10 s doubling to 6 min), announced by a `BackOff` Event.
6. A missing Model or Dataset is named in an Event and in the latest condition's
   reason/message; Models and Datasets are watched, so the job moves on as soon as
   the object appears.
7. Job deletes that arrive as tombstones still reach every LC involved.
8. The worker count comes from gm.yaml (`features.incremental_learning.workers`).

Level-triggered and restart-safe: every sync reads the job and its pods from the
informer caches and moves one step. The pod of a Train/Eval stage is recorded in the
stage's Starting/Running condition (`data: {"pod": ...}`), so a finished pod of an
earlier cycle is never mistaken for the current one. An in-memory "expectation"
covers only the window in which our own writes are not yet in the caches; after a
restart the caches are fresh and an already started worker (Pending/Running) is
adopted, never duplicated. Train/Eval workers also carry a digest of the Ready
condition they were made for (`sedna-gm.io/ready-condition`), so a worker that
finished while the GM was down between creating it and writing Starting is adopted
too, where Sedna would run the stage a second time.

Fast paths (DESIGN.md principle 4): cached objects are read in place, never deep-copied
(`_typed` is a shallow copy; the mutation detector in the tests proves nothing changes
them); status writes start from the cached object's resourceVersion and re-read only
after a 409. Every state change is an Event; the first sync's one Event names both the
new state and the inference worker created for it.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loguru import logger

from sedna.runtime import (
    DATASETS,
    INCREMENTAL_LEARNING_JOBS,
    MODEL_HOT_UPDATE_ANNOTATION_KEY,
    MODELS,
    PODS,
    SECRETS,
    ApiError,
    Controller,
    ControllerContext,
    DeletedFinalStateUnknown,
    JobRef,
    NotFound,
    ResourceEventHandlerFuncs,
    Result,
    SharedInformer,
    UpstreamMessage,
    WorkerError,
    WorkerParam,
    backoff_for_requeues,
    generate_labels,
    job_ref,
    meta_namespace_key,
    model_hot_update_config_file,
    split_key,
    update_status_with_retry,
)

from . import conditions as C
from .downstream import (
    ANNOTATION_PREFIX,
    DELETE,
    INSERT,
    EdgeMessage,
    Getter,
    Lookups,
    plan,
)
from .plugin import Options
from .spec import KIND, JobSpec, SpecError, cond_data, dataset_spec, job_spec, model_spec
from .upstream import ReportError, condition_from_report
from .workers import (
    EVAL_WORKER,
    INFERENCE_WORKER,
    TRAIN_WORKER,
    InputError,
    JobInfo,
    NamedDataset,
    NamedModel,
    eval_param,
    inference_param,
    train_param,
)

API_VERSION = "sedna.io/v1alpha1"
WORKER_TYPE_LABEL = "incrementallearningjob.sedna.io/worker-type"
STAGE_WORKER = {C.TRAIN: TRAIN_WORKER, C.EVAL: EVAL_WORKER, C.DEPLOY: INFERENCE_WORKER}
ACTIVE_PHASES = ("Pending", "Running")
# On Train/Eval workers: which Ready condition the pod was made for (a digest of it).
READY_CONDITION_ANNOTATION = "sedna-gm.io/ready-condition"

Obj = Mapping[str, Any]


class _Blocked(Exception):
    """The job cannot move until something changes that we watch (Model, Dataset, spec,
    a new LC report): reported, not retried."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class _Retry(_Blocked):
    """A failure that may heal by itself (API error, missing secret): retried with backoff."""


@dataclass(frozen=True)
class _Expectation:
    """ "For state `basis` I already created/restarted `pod`": guards against acting twice
    while our own writes have not reached the informer caches yet."""

    basis: str
    pod: str


@dataclass
class _Pending:
    """What a sync did that still needs its Event: the first sync's new inference pod is
    named in the Event of the state change written in the same sync (one Event, not two),
    else announced on its own when the sync ends."""

    created_pod: str = ""


def _meta(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _phase(pod: Obj | None) -> str:
    if pod is None:
        return "Unknown"
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _deleting(pod: Obj) -> bool:
    return bool(_meta(pod).get("deletionTimestamp"))


def _newest(pods: list[Obj]) -> Obj | None:
    if not pods:
        return None
    return max(
        pods, key=lambda p: (str(_meta(p).get("creationTimestamp", "")), _meta(p).get("name", ""))
    )


class IncrementalLearningController(Controller):
    """One per GM; `start`/`stop` are what the manager calls."""

    def __init__(self, ctx: ControllerContext) -> None:
        opts = ctx.options
        self.options = opts if isinstance(opts, Options) else Options.model_validate(opts or {})
        super().__init__(KIND, workers=ctx.workers, metrics=ctx.metrics, clock=ctx.clock)
        self.ctx = ctx
        self.jobs_client = ctx.kube.resource(INCREMENTAL_LEARNING_JOBS)
        self.pods_client = ctx.kube.resource(PODS)
        self.secrets_client = ctx.kube.resource(SECRETS)
        self.models_client = ctx.kube.resource(MODELS)
        self.datasets_client = ctx.kube.resource(DATASETS)
        self.jobs = ctx.informers.informer(INCREMENTAL_LEARNING_JOBS)
        self.pods = ctx.informers.informer(PODS)
        self.models = ctx.informers.informer(MODELS)
        self.datasets = ctx.informers.informer(DATASETS)
        self._lock = threading.Lock()
        self._expect: dict[str, _Expectation] = {}
        self._sent_nodes: dict[str, set[str]] = {}
        self.jobs.add_event_handler(
            ResourceEventHandlerFuncs(
                add=self._job_added, update=self._job_updated, delete=self._job_deleted
            )
        )
        self.pods.add_event_handler(
            ResourceEventHandlerFuncs(
                add=self._pod_added, update=self._pod_updated, delete=self._pod_deleted
            )
        )
        for informer, field in ((self.models, "model"), (self.datasets, "dataset")):
            informer.add_event_handler(_DependencyHandler(self, field))
        ctx.upstream.register(KIND, self.handle_report)

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        self.run()

    def stop(self, drain: bool = False, timeout: float | None = 10.0) -> None:
        super().stop(drain=drain, timeout=timeout)

    # -- event handlers (informer threads: enqueue and downstream only) --------------

    def _job_added(self, obj: Obj) -> None:
        self._enqueue_obj(obj)
        self._downstream(INSERT, obj)

    def _job_updated(self, old: Obj, new: Obj) -> None:
        self._enqueue_obj(new)
        self._downstream(INSERT, new)

    def _job_deleted(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        job = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        key = meta_namespace_key(obj)
        self.enqueue(key)
        self._downstream(DELETE, job, key=key)

    def _enqueue_obj(self, obj: Obj) -> None:
        try:
            self.enqueue(meta_namespace_key(obj))
        except ValueError as exc:
            logger.warning("{}: cannot enqueue an object without a name: {}", KIND, exc)

    def _owner_key(self, pod: Obj) -> str | None:
        """The key of the job that controls `pod` (kind and UID checked), else None."""
        meta = _meta(pod)
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

    def _pod_added(self, pod: Obj) -> None:
        key = self._owner_key(pod)
        if key is None:
            return
        if _phase(pod) == "Failed" and not _deleting(pod):
            delay = backoff_for_requeues(self.queue.num_requeues(key))
            if delay > 0:
                self.enqueue_after(key, delay)
                return
        self.enqueue(key)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        if _meta(old).get("resourceVersion") == _meta(new).get("resourceVersion"):
            return
        self._pod_added(new)

    def _pod_deleted(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        key = self._owner_key(pod)
        if key is not None:
            self.enqueue(key)

    def _dependency_changed(self, field: str, old: Obj | None, new: Obj) -> None:
        """A Model or Dataset appeared (or its spec changed): wake the jobs that name it."""
        if old is not None and old.get("spec") == new.get("spec"):
            return
        meta = _meta(new)
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        for job in self.jobs.lister.list(ns):
            if name in _referenced(job, field):
                self._enqueue_obj(job)

    # -- downstream ------------------------------------------------------------------

    def _lookups(self) -> Lookups:
        def secret(ns: str, name: str) -> Obj | None:
            try:
                return self.secrets_client.get(ns, name)
            except NotFound:
                return None

        def cached_or_read(informer: SharedInformer) -> Getter:
            # Job events can come before the Dataset/Model caches synced (start, restart):
            # a miss is confirmed with the API, as Sedna always reads them from it.
            def get(ns: str, name: str) -> Obj | None:
                try:
                    return informer.get_or_read(ns, name)
                except ApiError:
                    return None

            return get

        return Lookups(
            dataset=cached_or_read(self.datasets),
            model=cached_or_read(self.models),
            secret=secret,
            warn=lambda text: logger.warning("downstream: {}", text),
        )

    def _downstream(self, operation: str, job: Obj, key: str | None = None) -> None:
        """Send the job (and its models) to the LCs Sedna's rules name; never raises."""
        try:
            key = key or meta_namespace_key(job)
            messages = plan(operation, job, self._lookups())
            with self._lock:
                sent = self._sent_nodes.setdefault(key, set())
                if operation == DELETE:
                    # also every node we sent the job to: the Dataset may be gone too
                    planned = {m.node for m in messages}
                    obj = _typed(job)
                    messages += [EdgeMessage(n, DELETE, obj) for n in sorted(sent - planned)]
                    self._sent_nodes.pop(key, None)
                else:
                    for m in messages:
                        if m.kind != KIND:
                            continue
                        if m.operation == INSERT:
                            sent.add(m.node)
                        else:
                            sent.discard(m.node)
            for m in messages:
                try:
                    self.ctx.send(m.node, m.operation, m.obj)
                except Exception as exc:
                    logger.warning(
                        "downstream: cannot send {} {} to node {} ({}): {}",
                        m.kind, m.name, m.node, m.operation, exc,
                    )  # fmt: skip
        except Exception as exc:  # an informer thread must never die of our bug
            logger.opt(exception=exc).error("downstream sync of {} {} failed", KIND, key)

    # -- upstream --------------------------------------------------------------------

    def handle_report(self, msg: UpstreamMessage) -> None:
        """An LC's status report: append it as a condition; bad reports only get logged."""
        where = f"report from node {msg.node_name} for {KIND} {msg.namespace}/{msg.name}"
        if msg.operation != "status":
            logger.warning("{}: operation {!r} ignored (only status)", where, msg.operation)
            return
        cached = self.jobs.get_or_read(msg.namespace, msg.name)
        if cached is None:
            logger.warning("{}: no such job, report ignored", where)
            return
        job = _typed(cached)
        now = self.clock.wall()
        try:
            cond = condition_from_report(msg.content, now)
        except ReportError as exc:
            logger.warning("{}: invalid report: content.{}: {}", where, exc.field, exc.reason)
            self.ctx.events.warning(
                job,
                "InvalidReport",
                f"LC on node {msg.node_name} sent an invalid report: content.{exc.field}: "
                f"{exc.reason}",
            )
            return
        max_conditions = self.options.maxConditions
        previous: list[Obj | None] = [None]

        def mutate(fresh: dict[str, Any]) -> bool:
            conds = C.conditions_of(fresh)
            previous[0] = C.latest(conds)
            status = fresh.setdefault("status", {})
            status["conditions"] = C.append_condition(conds, cond, max_conditions)
            return True

        try:
            update_status_with_retry(
                self.jobs_client, msg.namespace, msg.name, mutate, current=cached
            )
        except NotFound:
            logger.warning("{}: job deleted meanwhile, report dropped", where)
            return
        except ApiError as exc:
            logger.error("{}: cannot append the reported condition: {}", where, exc)
            return
        self._changed(job, previous[0], cond, detail=f"reported by LC on node {msg.node_name}")

    # -- the reconcile ---------------------------------------------------------------

    def sync(self, key: str) -> Result | None:
        ns, name = split_key(key)
        cached = self.jobs.lister.get(ns, name)
        if cached is None:
            with self._lock:
                self._expect.pop(key, None)
            return None
        job = _typed(cached)
        try:
            spec = job_spec(job)
        except SpecError as exc:
            self._report(job, "InvalidSpec", f"{exc.field}: {exc.reason}", warning=True)
            return None
        try:
            return self._sync(key, job, spec)
        except _Retry as exc:
            self._report(job, exc.reason, exc.message, warning=True)
            self._note_on_latest(job, exc.reason, exc.message)
            return Result(requeue=True)
        except _Blocked as exc:
            self._report(job, exc.reason, exc.message, warning=True)
            self._note_on_latest(job, exc.reason, exc.message)
            return None

    def _sync(self, key: str, job: Obj, spec: JobSpec) -> Result | None:
        pending = _Pending()
        try:
            return self._advance(key, job, spec, pending)
        finally:
            # a creation no state change's Event named (write lost, error) still gets one
            if pending.created_pod:
                self._report(
                    job,
                    "InferenceWorkerCreated",
                    f"created inference worker pod {pending.created_pod}",
                    warning=False,
                )

    def _advance(self, key: str, job: Obj, spec: JobSpec, pending: _Pending) -> Result | None:
        """One step of the stage machine; `job` is the typed cached object (read only)."""
        status = job.get("status") if isinstance(job.get("status"), Mapping) else {}
        assert isinstance(status, Mapping)
        start_time = ""
        current = job  # what the status write is based on: the cache, or our patch's answer
        if not status.get("startTime"):
            current = self._ensure_inference_worker(key, job, spec, pending) or current
            start_time = C.rfc3339(self.clock.wall())

        conds = C.conditions_of(job)
        latest = C.latest(conds)
        stage = str(latest.get("stage", C.TRAIN)) if latest else C.TRAIN
        ctype = str(latest.get("type", "")) if latest else ""
        hot = spec.deploySpec.model.hotUpdateEnabled
        new_stage, new_type = stage, ctype
        reason, message, data, pod_name, node = "", "", "", "", ""

        if latest is None:
            new_type = C.WAITING
        elif ctype == C.WAITING:
            pass  # the LC decides when the stage is ready
        elif ctype == C.READY:
            if stage == C.DEPLOY:
                if not hot:
                    pod_name = self._restart_inference_worker(key, job, spec, latest)
                    new_type, reason = C.COMPLETED, "InferenceWorkerRestarted"
                else:
                    new_type = C.STARTING
            elif stage in (C.TRAIN, C.EVAL):
                pod_name, adopted = self._stage_worker(key, job, spec, stage, conds)
                new_type = C.STARTING
                reason = "WorkerAdopted" if adopted else "WorkerCreated"
                data = _pod_data(pod_name)
        elif ctype in (C.STARTING, C.RUNNING):
            pod = self._stage_pod(job, stage, latest)
            phase = _phase(pod)
            if pod is not None:
                pod_name = str(_meta(pod).get("name", ""))
                node = str((pod.get("spec") or {}).get("nodeName") or "")
                self._untag(pod)
            if pod is None and self._stage_pod_gone(job, stage, latest):
                new_type, reason = C.FAILED, "WorkerDeleted"
                message = f"the {STAGE_WORKER.get(stage, stage)} worker was deleted"
            elif phase == "Running":
                if stage == C.DEPLOY and not hot:
                    new_type = C.COMPLETED
                else:
                    current = self._set_stage_node(job, stage, node) or current
                    new_type, reason = C.RUNNING, "WorkerRunning"
                    data = _pod_data(pod_name)
            elif phase == "Succeeded":
                new_type, reason = C.COMPLETED, "WorkerSucceeded"
            elif phase == "Failed":
                new_type, reason = C.FAILED, "WorkerFailed"
        elif ctype == C.COMPLETED:
            new_stage, new_type = C.NEXT_STAGE.get(stage, C.TRAIN), C.WAITING
        elif ctype == C.FAILED:
            failures = C.consecutive_failures(conds)
            delay = C.failure_backoff(
                failures, self.options.failureBackoffSeconds, self.options.failureBackoffMaxSeconds
            )
            failed_at = C.parse_time(latest.get("lastTransitionTime"))
            if failed_at is not None and delay > 0:
                remaining = delay - (self.clock.wall() - failed_at).total_seconds()
                if remaining > 0:
                    self.ctx.events.warning(
                        job,
                        "BackOff",
                        f"{stage} stage failed ({failures} failure(s) in a row); "
                        f"back to Train in {_seconds(delay)}",
                    )
                    return Result(requeue_after=remaining)
            new_stage, new_type, reason = C.TRAIN, C.WAITING, "RetryAfterFailure"
            message = f"retry after {failures} failure(s) in a row (backoff {_seconds(delay)})"
        else:
            logger.warning("{} {}: unknown condition type {!r}, nothing to do", KIND, key, ctype)

        new_cond = None
        if new_type != ctype:
            if not message and pod_name:
                message = f"pod {pod_name}" + (f" on node {node}" if node else "")
            new_cond = C.new_condition(
                new_type, new_stage, self.clock.wall(), reason=reason, message=message, data=data
            )
        if new_cond is None and not start_time:
            return None
        written = self._write_status(current, latest, start_time, new_cond)
        if written and new_cond is not None:
            # the first sync's Event names both the new state and the pod it created
            created = pending.created_pod
            detail = f"created inference worker pod {created}" if created else ""
            self._changed(job, latest, new_cond, pod=pod_name, node=node, detail=detail)
            pending.created_pod = ""
        return None

    # -- status ----------------------------------------------------------------------

    def _write_status(
        self,
        job: Obj,
        basis: Obj | None,
        start_time: str,
        new_cond: C.Condition | None,
    ) -> bool:
        """Append `new_cond` if the job is still in state `basis`; False if it moved on.

        Comparing the fresh latest condition with the one we decided on keeps an LC
        report that arrived meanwhile from being overwritten or answered twice. The
        first PUT goes out with `job`'s resourceVersion (no GET); a 409 re-reads.
        """
        meta = _meta(job)
        ns, name = str(meta.get("namespace")), str(meta.get("name"))
        basis_fp = C.fingerprint(basis)
        max_conditions = self.options.maxConditions
        moved = [False]

        def mutate(fresh: dict[str, Any]) -> bool:
            conds = C.conditions_of(fresh)
            if C.fingerprint(C.latest(conds)) != basis_fp:
                moved[0] = True
                return False
            status = fresh.setdefault("status", {})
            changed = False
            if start_time and not status.get("startTime"):
                status["startTime"] = start_time
                changed = True
            if new_cond is not None:
                status["conditions"] = C.append_condition(conds, new_cond, max_conditions)
                changed = True
            return changed

        try:
            update_status_with_retry(self.jobs_client, ns, name, mutate, current=job)
        except NotFound:
            return False
        if moved[0]:
            logger.debug("{} {}/{}: state moved while syncing, will look again", KIND, ns, name)
            self.enqueue(f"{ns}/{name}")
            return False
        return True

    def _note_on_latest(self, job: Obj, reason: str, message: str) -> None:
        """Put a blocking problem on the latest condition (its type and stage unchanged)."""
        meta = _meta(job)
        ns, name = str(meta.get("namespace")), str(meta.get("name"))
        basis = C.latest(C.conditions_of(job))
        if basis is None:
            return
        basis_fp = C.fingerprint(basis)

        def mutate(fresh: dict[str, Any]) -> bool:
            conds = fresh.get("status", {}).get("conditions")
            if not isinstance(conds, list) or not conds or C.fingerprint(conds[-1]) != basis_fp:
                return False
            last = conds[-1]
            if last.get("reason") == reason and last.get("message") == message:
                return False
            last["reason"] = reason
            last["message"] = message
            last["lastHeartbeatTime"] = C.rfc3339(self.clock.wall())
            return True

        try:
            update_status_with_retry(self.jobs_client, ns, name, mutate, current=job)
        except ApiError as exc:
            logger.warning(
                "{} {}/{}: cannot note {} on its condition: {}", KIND, ns, name, reason, exc
            )

    def _changed(
        self,
        job: Obj,
        old: Obj | None,
        new: Obj,
        *,
        pod: str = "",
        node: str = "",
        detail: str = "",
    ) -> None:
        """The Event and the one log line of a state change."""
        meta = _meta(job)
        stage, type_ = str(new.get("stage")), str(new.get("type"))
        was = f"{old.get('stage')}/{old.get('type')}" if old is not None else "(new)"
        parts = [f"{was} -> {stage}/{type_}"]
        if pod:
            parts.append(f"pod {pod}")
        if node:
            parts.append(f"node {node}")
        if new.get("reason"):
            parts.append(f"reason {new.get('reason')}")
        if detail:
            parts.append(detail)
        text = ", ".join(parts)
        if old is None:
            before = "(none)"
        elif old.get("stage") == stage:
            before = str(old.get("type"))
        else:
            before = C.describe(old)
        logger.info(
            "incremental learning job {}/{}: stage {} | condition {} -> {} | pod {} | node {}{}",
            meta.get("namespace"),
            meta.get("name"),
            stage,
            before,
            type_,
            pod or "-",
            node or "-",
            f" | {detail}" if detail else "",
        )
        if type_ == C.FAILED:
            self.ctx.events.warning(job, f"{stage}{type_}", text)
        else:
            self.ctx.events.normal(job, f"{stage}{type_}", text)

    def _report(self, job: Obj, reason: str, message: str, *, warning: bool) -> None:
        meta = _meta(job)
        log = logger.warning if warning else logger.info
        log("{} {}/{}: {}: {}", KIND, meta.get("namespace"), meta.get("name"), reason, message)
        if warning:
            self.ctx.events.warning(job, reason, message)
        else:
            self.ctx.events.normal(job, reason, message)

    # -- pods ------------------------------------------------------------------------

    def _job_pods(self, job: Obj, worker_type: str) -> list[Obj]:
        """The job's pods of one worker type: the pods it controls (owner index, so the
        cost follows the job's pods, not the namespace's) that carry Sedna's worker
        labels for it."""
        meta = _meta(job)
        ref = JobRef(
            API_VERSION,
            KIND,
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
            str(meta.get("uid") or ""),
        )
        if not ref.uid:
            return []
        want = generate_labels(ref, worker_type).items()
        return [
            p
            for p in self.pods.lister.by_owner_uid(ref.uid)
            if want <= (_meta(p).get("labels") or {}).items()
        ]

    def _active(self, job: Obj, worker_type: str) -> list[Obj]:
        return [
            p
            for p in self._job_pods(job, worker_type)
            if _phase(p) in ACTIVE_PHASES and not _deleting(p)
        ]

    def _stage_pod(self, job: Obj, stage: str, latest: Obj) -> Obj | None:
        """The pod of the running stage: the one named in the condition, else the newest
        of the stage's worker type (conditions written by Sedna's Go GM name no pod)."""
        worker_type = STAGE_WORKER.get(stage)
        if worker_type is None:
            return None
        recorded = _recorded_pod(latest)
        if recorded:
            pod = self.pods.lister.get(str(_meta(job).get("namespace")), recorded)
            if (
                pod is not None
                and _meta(pod).get("labels", {}).get(WORKER_TYPE_LABEL) == worker_type
            ):
                return pod
            if stage != C.DEPLOY:
                return None
        if stage == C.DEPLOY:
            active = self._active(job, worker_type)
            if active:
                return _newest(active)
        return _newest([p for p in self._job_pods(job, worker_type) if not _deleting(p)])

    def _untag(self, pod: Obj) -> None:
        """Drop the ready-condition tag of a pod its stage's condition now records.

        The tag only bridges the window between creating a worker and recording it; a
        recorded pod keeping it could be taken for the worker of a later Ready that is
        alike to the second, once trimming has dropped the condition naming the pod.
        """
        meta = _meta(pod)
        if READY_CONDITION_ANNOTATION not in (meta.get("annotations") or {}):
            return
        patch = {"metadata": {"annotations": {READY_CONDITION_ANNOTATION: None}}}
        try:
            self.pods_client.patch(str(meta.get("namespace")), str(meta.get("name")), patch)
        except NotFound:
            pass
        except ApiError as exc:  # the next sync of this stage tries again
            logger.warning(
                "pod {}/{}: cannot drop {}: {}",
                meta.get("namespace"),
                meta.get("name"),
                READY_CONDITION_ANNOTATION,
                exc,
            )

    def _stage_pod_gone(self, job: Obj, stage: str, latest: Obj) -> bool:
        """Whether the recorded pod is really gone (not just missing from a lagging cache)."""
        recorded = _recorded_pod(latest)
        if not recorded or stage == C.DEPLOY:
            return False
        try:
            self.pods_client.get(str(_meta(job).get("namespace")), recorded)
        except NotFound:
            return True
        except ApiError:
            return False
        return False

    def _set_stage_node(self, job: Obj, stage: str, node: str) -> Obj | None:
        """Record where the stage runs (`sedna.io/<Stage>`): downstream sends the job there.

        Returns the patched job (None when nothing was patched)."""
        if not node:
            return None
        key = ANNOTATION_PREFIX + stage
        if (_meta(job).get("annotations") or {}).get(key) == node:
            return None
        return self._patch_annotation(job, key, node)

    def _patch_annotation(self, job: Obj, key: str, value: str) -> Obj:
        """Set one annotation; returns the job as the server now has it, so a status write
        in the same sync can use its resourceVersion."""
        meta = _meta(job)
        try:
            return self.jobs_client.patch(
                str(meta.get("namespace")),
                str(meta.get("name")),
                {"metadata": {"annotations": {key: value}}},
            )
        except ApiError as exc:
            raise _Retry("AnnotationFailed", f"cannot set annotation {key}: {exc}") from exc

    def _model(self, job: Obj, name: str, field: str) -> NamedModel:
        ns = str(_meta(job).get("namespace"))
        obj = self.models.lister.get(ns, name)
        if obj is None:
            raise _Blocked("MissingModel", f"Model {ns}/{name} ({field}) not found")
        try:
            return NamedModel(name, model_spec(obj))
        except SpecError as exc:
            raise _Blocked("InvalidModel", str(exc)) from None

    def _dataset(self, job: Obj, name: str) -> NamedDataset:
        ns = str(_meta(job).get("namespace"))
        obj = self.datasets.lister.get(ns, name)
        if obj is None:
            raise _Blocked("MissingDataset", f"Dataset {ns}/{name} (spec.dataset.name) not found")
        try:
            return NamedDataset(name, dataset_spec(obj))
        except SpecError as exc:
            raise _Blocked("InvalidDataset", str(exc)) from None

    def _job_info(self, job: Obj) -> JobInfo:
        meta = _meta(job)
        return JobInfo(
            str(meta.get("namespace")),
            str(meta.get("name")),
            self.ctx.config.localController.server,
        )

    def _create(self, job: Obj, template: Obj, param: WorkerParam, field: str) -> str:
        what = f"{param.worker_type} worker"
        try:
            pod = self.ctx.worker_runtime.create_pod_with_template(
                job, template, param, field=field
            )
        except WorkerError as exc:
            raise _Retry(
                "WorkerCreateFailed", f"cannot build the {what}: {exc.field}: {exc.message}"
            ) from None
        except ApiError as exc:
            raise _Retry("WorkerCreateFailed", f"cannot create the {what}: {exc}") from None
        return str(_meta(pod).get("name", ""))

    def _inference_param(self, job: Obj, spec: JobSpec) -> WorkerParam:
        deploy = self._model(job, spec.deploySpec.model.name, "spec.deploySpec.model.name")
        return inference_param(self._job_info(job), spec, deploy)

    def _ensure_inference_worker(
        self, key: str, job: Obj, spec: JobSpec, pending: _Pending
    ) -> Obj | None:
        """First sync: the inference worker, unless one is Pending or Running.

        The hot-update annotation is (re)applied every time, so a crash or an API error
        between the pod and the annotation heals on the next sync. A created pod goes
        into `pending` (its Event is the caller's); returns the job as patched, if it was.
        """
        basis = "first-sync:" + str(_meta(job).get("uid"))
        with self._lock:
            expected = self._expect.get(key)
        if not (expected is not None and expected.basis == basis) and not self._active(
            job, INFERENCE_WORKER
        ):
            param = self._inference_param(job, spec)
            try:
                name = self._create(
                    job, spec.deploySpec.template, param, "spec.deploySpec.template"
                )
            except _Retry as exc:
                raise _Retry("InferenceWorkerFailed", exc.message) from None
            with self._lock:
                self._expect[key] = _Expectation(basis, name)
            pending.created_pod = name
        return self._after_inference_created(job, spec)

    def _after_inference_created(self, job: Obj, spec: JobSpec) -> Obj | None:
        """The hot-update annotation; returns the patched job (None when already set)."""
        if spec.deploySpec.model.hotUpdateEnabled:
            path = model_hot_update_config_file(job_ref(_typed(job)))
            annotations = _meta(job).get("annotations") or {}
            if annotations.get(MODEL_HOT_UPDATE_ANNOTATION_KEY) != path:
                return self._patch_annotation(job, MODEL_HOT_UPDATE_ANNOTATION_KEY, path)
        return None

    def _restart_inference_worker(self, key: str, job: Obj, spec: JobSpec, latest: Obj) -> str:
        """Deploy without hot update: replace the inference worker so it loads the new model."""
        basis = C.fingerprint(latest)
        with self._lock:
            expected = self._expect.get(key)
        if expected is not None and expected.basis == basis:
            return expected.pod
        param = self._inference_param(job, spec)
        ns = str(_meta(job).get("namespace"))
        for pod in self._job_pods(job, INFERENCE_WORKER):
            if _deleting(pod):
                continue
            try:
                self.pods_client.delete(ns, str(_meta(pod).get("name")))
            except NotFound:
                pass
            except ApiError as exc:
                raise _Retry(
                    "InferenceWorkerFailed", f"cannot delete the inference worker: {exc}"
                ) from None
        try:
            name = self._create(job, spec.deploySpec.template, param, "spec.deploySpec.template")
        except _Retry as exc:
            raise _Retry("InferenceWorkerFailed", exc.message) from None
        with self._lock:
            self._expect[key] = _Expectation(basis, name)
        self._after_inference_created(job, spec)
        return name

    def _stage_worker(
        self, key: str, job: Obj, spec: JobSpec, stage: str, conds: list[Obj]
    ) -> tuple[str, bool]:
        """The Train/Eval worker for the Ready condition: adopted if one is Pending or
        Running, else created from the condition's inputs. Returns (pod name, adopted)."""
        latest = conds[-1]
        basis = C.fingerprint(latest)
        with self._lock:
            expected = self._expect.get(key)
        if expected is not None and expected.basis == basis:
            return expected.pod, False
        worker_type = STAGE_WORKER[stage]
        active = self._active(job, worker_type)
        if active:
            pod = _newest(active)
            assert pod is not None
            return str(_meta(pod).get("name")), True
        # A pod made for this very Ready but already finished: the GM died between the
        # pod and the Starting write, and the worker ran meanwhile. Sedna would run the
        # stage again; we take its result. Recorded pods lose the tag (`_untag`), and a
        # pod a condition names served an earlier Ready (Readies can be alike to the second).
        tag = _ready_tag(basis)
        recorded = {_recorded_pod(c) for c in conds}
        made_for = [
            p
            for p in self._job_pods(job, worker_type)
            if not _deleting(p)
            and (_meta(p).get("annotations") or {}).get(READY_CONDITION_ANNOTATION) == tag
            and _meta(p).get("name") not in recorded
        ]
        if made_for:
            pod = _newest(made_for)
            assert pod is not None
            return str(_meta(pod).get("name")), True

        initial = self._model(job, spec.initialModel.name, "spec.initialModel.name")
        self._model(job, spec.deploySpec.model.name, "spec.deploySpec.model.name")
        dataset = self._dataset(job, spec.dataset.name)
        meta = _meta(job)
        obj = f"{KIND} {meta.get('namespace')}/{meta.get('name')}"
        data_field = f"status.conditions[{len(conds) - 1}].data"
        try:
            data = cond_data(latest.get("data"), obj, data_field)
            builder = train_param if stage == C.TRAIN else eval_param
            param = builder(self._job_info(job), spec, data, initial, dataset, data_field)
        except SpecError as exc:
            raise _Blocked("InvalidConditionData", f"{exc.field}: {exc.reason}") from None
        except InputError as exc:
            raise _Blocked("InvalidConditionData", f"{exc.field}: {exc.reason}") from None
        template = spec.trainSpec.template if stage == C.TRAIN else spec.evalSpec.template
        field = "spec.trainSpec.template" if stage == C.TRAIN else "spec.evalSpec.template"
        name = self._create(
            job, _annotated(template, READY_CONDITION_ANNOTATION, tag), param, field
        )
        with self._lock:
            self._expect[key] = _Expectation(basis, name)
        return name, False


# -- helpers -------------------------------------------------------------------------


@dataclass(frozen=True)
class _DependencyHandler:
    """Model/Dataset events: only adds and spec changes matter (fix 6)."""

    controller: IncrementalLearningController
    field: str

    def on_add(self, obj: Obj) -> None:
        self.controller._dependency_changed(self.field, None, obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        self.controller._dependency_changed(self.field, old, new)

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        pass


def _typed(obj: Obj) -> dict[str, Any]:
    """The job with kind and apiVersion (list responses carry neither), for the runtime's
    labels, owner references and Events.

    A shallow copy: everything below the top level is the informer cache's own object,
    so nothing may change it (status writes deep-copy, other writes build new dicts;
    SEDNA_CACHE_MUTATION_DETECTOR=1 in the tests checks it). A deep copy per sync was a
    quarter of the controller's CPU.
    """
    job = dict(obj)
    job["kind"] = KIND
    job.setdefault("apiVersion", API_VERSION)
    return job


def _ready_tag(basis: str) -> str:
    """A short, stable digest of a Ready condition, for an annotation value."""
    return hashlib.sha256(basis.encode()).hexdigest()[:20]


def _annotated(template: Obj, key: str, value: str) -> dict[str, Any]:
    """The template with one more pod annotation; copies only what it changes (the
    template is the informer cache's)."""
    meta = template.get("metadata")
    meta = dict(meta) if isinstance(meta, Mapping) else {}
    annotations = meta.get("annotations")
    meta["annotations"] = {**(annotations if isinstance(annotations, Mapping) else {}), key: value}
    return {**template, "metadata": meta}


def _pod_data(pod_name: str) -> str:
    return json.dumps({"pod": pod_name}, separators=(",", ":")) if pod_name else ""


def _recorded_pod(cond: Obj) -> str:
    """The pod a Starting/Running condition written by us names, else ""."""
    data = cond.get("data")
    if not isinstance(data, str) or not data.startswith("{"):
        return ""
    try:
        parsed = json.loads(data)
    except ValueError:
        return ""
    pod = parsed.get("pod") if isinstance(parsed, dict) else None
    return pod if isinstance(pod, str) else ""


def _seconds(value: float) -> str:
    return f"{value:g}s"


def _referenced(job: Obj, field: str) -> set[str]:
    """Names of the Models ("model") or Datasets ("dataset") a raw job refers to."""
    spec = job.get("spec")
    if not isinstance(spec, Mapping):
        return set()

    def name_at(*path: str) -> str:
        cur: Any = spec
        for p in path:
            cur = cur.get(p) if isinstance(cur, Mapping) else None
        return cur if isinstance(cur, str) else ""

    if field == "dataset":
        names = {name_at("dataset", "name")}
    else:
        names = {
            name_at("initialModel", "name"),
            name_at("deploySpec", "model", "name"),
            name_at("evalSpec", "initialEvalModel", "name"),
        }
    return names - {""}
