"""The stage machine: one controller for every staged-job kind (see `feature`).

Sedna parity (the `transitJobState` of its incrementallearning and lifelonglearning
controllers), with these fixes:

1. A stage's pod is found by the worker-type label and the pod name recorded in the
   stage's condition, not by splitting the pod name on '-'; only pods the job controls
   (controller owner reference) are its workers, looked up in the pod cache's owner
   index rather than by scanning the namespace.
2. A new Ready never adopts a pod an earlier condition recorded: a worker of an
   earlier round still running (a failed train worker kept alive by `restartPolicy:
   OnFailure`) would otherwise run the new round on its old data and complete it.
3. No duplicate worker after a lost create answer: a create that failed with a
   timeout or 5xx is checked against the API (not the cache) before it is retried
   (`PodCreations`).
4. Conditions are bounded (`StageOptions.max_conditions`), keeping the latest of each
   stage and the LC's latest Completed reports.
5. A job whose stages keep failing goes back to Train only after an exponential
   backoff (10 s doubling to 6 min), announced by a `BackOff` Event.
6. A job waiting for an object the LC needs (a Dataset, an initial Model) gets a
   Warning Event and the reason on its latest condition; the objects are watched, so
   the job is synced and sent to its LCs as soon as the object appears.
7. Job deletes that arrive as tombstones still reach every LC the job was sent to.

Level-triggered and restart-safe: every sync reads the job and its pods from the
informer caches and moves one step. The pod of a Train/Eval stage is recorded in the
stage's Starting/Running condition (`data: {"pod": ...}`), so a finished pod of an
earlier cycle is never mistaken for the current one. An in-memory "expectation"
covers only the window in which our own writes are not yet in the caches; after a
restart the caches are fresh and an already started worker is adopted, never
duplicated. Train/Eval workers carry a digest of the Ready condition they were made
for (`sedna-gm.io/ready-condition`, dropped once a condition records the pod), so a
worker that finished while the GM was down between creating it and writing Starting
is adopted too, where Sedna would run the stage a second time.

Fast paths: cached objects are read in place, never deep-copied (`typed` is a shallow
copy; the tests' mutation detector proves nothing changes them); status writes start
from the cached object's resourceVersion and re-read only after a 409.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from loguru import logger

from sedna.runtime.context import ControllerContext
from sedna.runtime.controller import Controller, Result
from sedna.runtime.informers import (
    DeletedFinalStateUnknown,
    HandlerRegistration,
    ResourceEventHandlerFuncs,
    meta_namespace_key,
    split_key,
)
from sedna.runtime.kube import PODS, ApiError, NotFound, update_status_with_retry
from sedna.runtime.stages import conditions as C
from sedna.runtime.stages.feature import (
    DELETE,
    INSERT,
    STAGE_ANNOTATION_PREFIX,
    Dependency,
    EdgeMessage,
    InvalidJob,
    PodRequest,
    ReportError,
    StageBlocked,
    StagedJobFeature,
    StageOptions,
    StageRetry,
)
from sedna.runtime.stages.late_data import (
    POD_EXIT_REASON,
    carries_data,
    fill_in,
    late_completion,
)
from sedna.runtime.stages.reports import condition_from_report
from sedna.runtime.upstream import UpstreamMessage
from sedna.runtime.workers import (
    PodCreations,
    WorkerError,
    backoff_for_requeues,
    generate_labels,
    job_ref,
)

__all__ = ["READY_CONDITION_ANNOTATION", "StageMachine", "ready_tag", "recorded_pod", "typed"]

ACTIVE_PHASES = ("Pending", "Running")
READY_CONDITION_ANNOTATION = "sedna-gm.io/ready-condition"
"""On Train/Eval workers: which Ready condition the pod was made for (a digest of it)."""

Obj = Mapping[str, Any]


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


def typed(obj: Obj, kind: str, api_version: str) -> dict[str, Any]:
    """The job with kind and apiVersion (list responses carry neither), for the runtime's
    labels, owner references and Events.

    A shallow copy: everything below the top level is the informer cache's own object,
    so nothing may change it (status writes deep-copy, other writes build new dicts).
    A deep copy per sync was a quarter of the controller's CPU.
    """
    job = dict(obj)
    job["kind"] = kind
    job.setdefault("apiVersion", api_version)
    return job


def recorded_pod(cond: Obj) -> str:
    """The pod a Starting/Running condition written by the machine names, else ""."""
    data = cond.get("data")
    if not isinstance(data, str) or not data.startswith("{"):
        return ""
    try:
        parsed = json.loads(data)
    except ValueError:
        return ""
    pod = parsed.get("pod") if isinstance(parsed, dict) else None
    return pod if isinstance(pod, str) else ""


_NOTED = ("reason", "message", "lastHeartbeatTime")
_RETRY_REASON = "RetryAfterFailure"
_INVALID_SPEC = "InvalidSpec"
_PARSED_SPECS = 4096  # parsed specs kept (by job uid and generation), least recent dropped
# How far along its stage a condition is, and where an LC report would put it.
_CONDITION_RANK = {
    C.WAITING: 0,
    C.READY: 1,
    C.STARTING: 2,
    C.RUNNING: 3,
    C.COMPLETED: 4,
    C.FAILED: 4,
}
_FINAL_RANK = 4
_REPORT_RANK = {"waiting": 0, "ready": 1, "completed": _FINAL_RANK, "failed": _FINAL_RANK}


def _intent(cond: Obj) -> str:
    """What a Ready condition asks for, for expectations, the ready tag and lost-create
    look-ups: the condition without what the machine notes on it (`_note_on_latest`
    writes a failure's reason there, which must not make a retry a new request)."""
    return C.fingerprint({k: v for k, v in cond.items() if k not in _NOTED})


def _last_round_end(conds: list[Obj]) -> datetime | None:
    """When the newest Completed or Failed condition before the latest was written."""
    for cond in reversed(conds[:-1]):
        if cond.get("type") in (C.COMPLETED, C.FAILED):
            return C.parse_time(cond.get("lastTransitionTime"))
    return None


def _ready_tag(basis: str) -> str:
    """A short, stable digest of a Ready condition, for an annotation value."""
    return hashlib.sha256(basis.encode()).hexdigest()[:20]


def ready_tag(cond: Obj) -> str:
    """The `READY_CONDITION_ANNOTATION` value of a worker made for Ready condition `cond`
    (what a GM before a restart left on the pods it made)."""
    return _ready_tag(_intent(cond))


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


def _seconds(value: float) -> str:
    return f"{value:g}s"


class StageMachine(Controller):
    """The controller of one staged-job kind; `start`/`stop` are what the manager calls.

    Subclass it only to name the feature's controller (and expose what its tests need);
    behaviour comes from the `StagedJobFeature` it is given.
    """

    def __init__(
        self, ctx: ControllerContext, feature: StagedJobFeature, options: StageOptions
    ) -> None:
        jobs = ctx.informers.informer(feature.resource)
        super().__init__(
            feature.kind,
            workers=ctx.workers,
            metrics=ctx.metrics,
            clock=ctx.clock,
            # an unexpected failure of a sync is a Warning Event on the job, not only a log
            events=ctx.events,
            informer=jobs,
        )
        self.ctx = ctx
        self.feature = feature
        self.stage_options = options
        self.kind = feature.kind
        self.api_version = feature.resource.api_version
        self.jobs_client = ctx.kube.resource(feature.resource)
        self.pods_client = ctx.kube.resource(PODS)
        self.jobs = jobs
        self.pods = ctx.informers.worker_pods(feature.resource)
        self.creations = PodCreations(self.pods_client, started=ctx.clock.wall())
        self.worker_type_label = f"{feature.kind.lower()}.{feature.resource.group}/worker-type"
        self._lock = threading.Lock()
        self._expect: dict[str, _Expectation] = {}
        self._specs: OrderedDict[tuple[str, int], Any] = OrderedDict()  # see _parsed
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
        for dep in feature.dependencies():
            handler = _DependencyHandler(self, dep)
            handler.registration = dep.informer.add_event_handler(handler)
        ctx.upstream.register(feature.kind, self.handle_report, stale=self.stale_report)

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        self.run()

    def stop(self, drain: bool = False, timeout: float | None = 10.0) -> None:
        super().stop(drain=drain, timeout=timeout)

    def typed(self, obj: Obj) -> dict[str, Any]:
        return typed(obj, self.kind, self.api_version)

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
            logger.warning("{}: cannot enqueue an object without a name: {}", self.kind, exc)

    def _owner_key(self, pod: Obj) -> str | None:
        """The key of the job that controls `pod` (kind and UID checked), else None."""
        meta = _meta(pod)
        for ref in meta.get("ownerReferences") or []:
            if not isinstance(ref, Mapping) or not ref.get("controller"):
                continue
            if ref.get("kind") != self.kind:
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

    def _dependency_changed(
        self, dep: Dependency, old: Obj | None, new: Obj, *, initial: bool
    ) -> None:
        """An object jobs refer to appeared (or its spec changed): sync the jobs that
        name it and send them downstream now (their LCs may be waiting for it).

        The adds of the informer's first list (`initial`) only sync: those objects
        existed when the jobs were sent, so their LCs have them.
        """
        if old is not None and old.get("spec") == new.get("spec"):
            return
        meta = _meta(new)
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        for job in self.jobs.lister.list(ns):
            if name in dep.names(job):
                self._enqueue_obj(job)
                if not initial:
                    self._downstream(INSERT, job)

    # -- downstream ------------------------------------------------------------------

    def _downstream(self, operation: str, job: Obj, key: str | None = None) -> None:
        """Send the job (and what the feature adds) to the LCs its plan names; never raises."""
        try:
            key = key or meta_namespace_key(job)
            messages = self.feature.plan(operation, job)
            with self._lock:
                sent = self._sent_nodes.setdefault(key, set())
                if operation == DELETE:
                    # also every node we sent the job to: what routed it there may be gone
                    planned = {m.node for m in messages}
                    obj = self.typed(job)
                    messages += [EdgeMessage(n, DELETE, obj) for n in sorted(sent - planned)]
                    self._sent_nodes.pop(key, None)
                else:
                    for m in messages:
                        if m.kind != self.kind:
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
            logger.opt(exception=exc).error("downstream sync of {} {} failed", self.kind, key)

    # -- upstream --------------------------------------------------------------------

    def stale_report(self, msg: UpstreamMessage) -> bool:
        """Whether a report came too late to apply: it never moves a job backwards.

        A report is compared with the latest condition of its own stage in the job's
        current round (from the last Train/Waiting on): one behind it (a duplicate
        train/ready while the train worker already runs, which would append a second
        Ready and start a second worker), or a second final word on a stage that has
        ended (a train/failed arriving once the job is in Eval), is skipped and counted
        by the upstream layer; so is a report for the stage just left in a round that
        has not reached it again (the last round's deploy/completed). Anything else is
        applied as Sedna applies it, and malformed reports go to the handler, which
        rejects them with a reason.
        """
        cached = self.jobs.lister.get(msg.namespace, msg.name)
        if cached is None or not _stale(C.conditions_of(cached), msg.content):
            return False
        # The cache may lag the API (the LC can answer a condition written a moment ago):
        # a report is skipped only if the job as stored says so too.
        try:
            fresh = self.jobs_client.get(msg.namespace, msg.name)
        except ApiError:
            return False  # the handler reads the job again and says why
        return _stale(C.conditions_of(fresh), msg.content)

    def handle_report(self, msg: UpstreamMessage) -> None:
        """An LC's status report: append it as a condition; bad reports only get logged."""
        where = f"report from node {msg.node_name} for {self.kind} {msg.namespace}/{msg.name}"
        if msg.operation != "status":
            logger.warning("{}: operation {!r} ignored (only status)", where, msg.operation)
            return
        cached = self.jobs.get_or_read(msg.namespace, msg.name)
        if cached is None:
            logger.warning("{}: no such job, report ignored", where)
            return
        job = self.typed(cached)
        now = self.clock.wall()
        try:
            cond = condition_from_report(msg.content, now, self.feature.report_data)
        except ReportError as exc:
            logger.warning("{}: invalid report: content.{}: {}", where, exc.field, exc.reason)
            self.ctx.events.warning(
                job,
                "InvalidReport",
                f"LC on node {msg.node_name} sent an invalid report: content.{exc.field}: "
                f"{exc.reason}",
            )
            return
        max_conditions = self.stage_options.max_conditions
        previous: list[Obj | None] = [None]
        tries = [0]
        skipped = [""]
        filled = [False]

        def mutate(fresh: dict[str, Any]) -> bool:
            conds = C.conditions_of(fresh)
            tries[0] += 1
            if tries[0] > 1:
                # an earlier try may have landed though its answer was lost
                skipped[0] = _already_applied(conds, cond, msg.content)
                if skipped[0]:
                    return False
            # the worker's exit may have completed the stage first (`late_data`)
            late = late_completion(conds, msg.content)
            if late is not None and not carries_data(cond.get("data")):
                skipped[0] = _BEHIND  # nothing to add to what the exit wrote
                return False
            previous[0] = C.latest(conds)
            status = fresh.setdefault("status", {})
            if late is not None:
                status["conditions"] = fill_in(conds, late, cond)
            else:
                status["conditions"] = C.append_condition(conds, cond, max_conditions)
            filled[0] = late is not None
            self.feature.on_report(status, msg.content)
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
        if skipped[0] == _BEHIND:
            logger.info("{}: the job moved past the report meanwhile, not applied", where)
            return
        if skipped[0] == _LANDED:
            logger.info("{}: the write whose answer was lost had landed", where)
        if filled[0]:
            logger.info(
                "{}: {}/Completed was written at the worker's exit; it now carries the "
                "report's data",
                where,
                cond.get("stage"),
            )
            return
        self._changed(job, previous[0], cond, detail=f"reported by LC on node {msg.node_name}")

    # -- the reconcile ---------------------------------------------------------------

    def sync(self, key: str) -> Result | None:
        ns, name = split_key(key)
        cached = self.jobs.lister.get(ns, name)
        if cached is None:
            with self._lock:
                self._expect.pop(key, None)
            self.creations.forget(key)
            return None
        job = self.typed(cached)
        try:
            spec = self._parsed(job)
        except InvalidJob as exc:
            message = f"{exc.field}: {exc.reason}"
            self._report(job, _INVALID_SPEC, message, warning=True)
            self._note_on_latest(job, _INVALID_SPEC, message, initial=True)
            return None
        # the spec is fixed: `_advance` clears a Waiting condition's note itself
        latest = C.latest(C.conditions_of(job))
        if latest and latest.get("reason") == _INVALID_SPEC and latest.get("type") != C.WAITING:
            self._clear_note(job, latest)
        try:
            return self._sync(key, job, spec)
        except StageRetry as exc:
            self._report(job, exc.reason, exc.message, warning=True)
            self._note_on_latest(job, exc.reason, exc.message)
            return Result(requeue=True)
        except StageBlocked as exc:
            self._report(job, exc.reason, exc.message, warning=True)
            self._note_on_latest(job, exc.reason, exc.message, initial=True)
            return None

    def _parsed(self, job: Obj) -> Any:
        """`feature.parse_spec`, once per spec generation: status writes and pod events
        sync a job again and again with the same spec (the views are frozen and the
        cached object they keep raw parts of is never changed)."""
        meta = _meta(job)
        generation = meta.get("generation")
        if type(generation) is not int or generation <= 0:
            return self.feature.parse_spec(job)  # no generation: nothing to key on
        key = (str(meta.get("uid") or ""), generation)
        with self._lock:
            spec = self._specs.get(key)
            if spec is not None:
                self._specs.move_to_end(key)
                return spec
        spec = self.feature.parse_spec(job)
        with self._lock:
            self._specs[key] = spec
            if len(self._specs) > _PARSED_SPECS:
                self._specs.popitem(last=False)
        return spec

    def _sync(self, key: str, job: Obj, spec: Any) -> Result | None:
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

    def _advance(self, key: str, job: Obj, spec: Any, pending: _Pending) -> Result | None:
        """One step of the stage machine; `job` is the typed cached object (read only)."""
        status = job.get("status") if isinstance(job.get("status"), Mapping) else {}
        assert isinstance(status, Mapping)
        start_time = ""
        current = job  # what the status write is based on: the cache, or our patch's answer
        if not status.get("startTime"):
            if self.feature.inference_at_start:
                current = self._ensure_inference_worker(key, job, spec, pending) or current
            start_time = C.rfc3339(self.clock.wall())

        conds = C.conditions_of(job)
        latest = C.latest(conds)
        stage = str(latest.get("stage", C.TRAIN)) if latest else C.TRAIN
        ctype = str(latest.get("type", "")) if latest else ""
        hot = self.feature.hot_update(spec)
        new_stage, new_type = stage, ctype
        reason, message, data, pod_name, node = "", "", "", "", ""

        if latest is None:
            new_type = C.WAITING
        elif ctype == C.WAITING:
            # the LC decides when the stage is ready; it cannot without these
            self.feature.check_inputs(job, spec, stage)
            if latest.get("reason") not in (None, "", _RETRY_REASON):
                self._clear_note(job, latest)  # what blocked the job exists now
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
                worker = self.feature.stage_workers.get(stage, stage)
                message = f"the {worker} worker was deleted"
            elif phase == "Running":
                if stage == C.DEPLOY and not hot:
                    new_type = C.COMPLETED
                else:
                    current = self._set_stage_node(job, stage, node) or current
                    new_type, reason = C.RUNNING, "WorkerRunning"
                    data = _pod_data(pod_name)
            elif phase == "Succeeded":
                new_type, reason = C.COMPLETED, POD_EXIT_REASON
            elif phase == "Failed":
                new_type, reason = C.FAILED, "WorkerFailed"
        elif ctype == C.COMPLETED:
            new_stage, new_type = C.NEXT_STAGE.get(stage, C.TRAIN), C.WAITING
        elif ctype == C.FAILED:
            opts = self.stage_options
            failures = C.consecutive_failures(conds)
            delay = C.failure_backoff(
                failures, opts.failure_backoff_seconds, opts.failure_backoff_max_seconds
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
            new_stage, new_type, reason = C.TRAIN, C.WAITING, _RETRY_REASON
            message = f"retry after {failures} failure(s) in a row (backoff {_seconds(delay)})"
        else:
            logger.warning(
                "{} {}: unknown condition type {!r}, nothing to do", self.kind, key, ctype
            )

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
        max_conditions = self.stage_options.max_conditions
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
            logger.debug(
                "{} {}/{}: state moved while syncing, will look again", self.kind, ns, name
            )
            self.enqueue(f"{ns}/{name}")
            return False
        return True

    def _note_on_latest(
        self, job: Obj, reason: str, message: str, *, initial: bool = False
    ) -> None:
        """Put a blocking problem on the latest condition (its type and stage unchanged).

        `initial`: a job with no condition yet gets the first one, Train/Waiting, with
        the problem on it (what Sedna's first sync writes, and why it waits), so
        `kubectl get` shows its state; `startTime` stays unset, so the next sync still
        does the first sync's work (IL's inference worker). A retried API error
        (`StageRetry`) does not: the write would wake the job before its backoff.
        """
        meta = _meta(job)
        ns, name = str(meta.get("namespace")), str(meta.get("name"))
        basis = C.latest(C.conditions_of(job))
        if basis is None:
            if initial:
                cond = C.new_condition(
                    C.WAITING, C.TRAIN, self.clock.wall(), reason=reason, message=message
                )
                if self._write_status(job, None, "", cond):
                    self._changed(job, None, cond)
            return
        if basis.get("reason") == reason and basis.get("message") == message:
            return  # already noted: no write, no update event, no sync loop
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
                "{} {}/{}: cannot note {} on its condition: {}", self.kind, ns, name, reason, exc
            )

    def _clear_note(self, job: Obj, basis: Obj) -> None:
        """Drop a blocking problem noted on a Waiting condition once it is gone.

        Waiting conditions carry no reason but the retry's (the machine's) or none (the
        LC's), so any other reason is a note of `_note_on_latest`.
        """
        meta = _meta(job)
        ns, name = str(meta.get("namespace")), str(meta.get("name"))
        basis_fp = C.fingerprint(basis)

        def mutate(fresh: dict[str, Any]) -> bool:
            conds = fresh.get("status", {}).get("conditions")
            if not isinstance(conds, list) or not conds or C.fingerprint(conds[-1]) != basis_fp:
                return False
            conds[-1].pop("reason", None)
            conds[-1].pop("message", None)
            conds[-1]["lastHeartbeatTime"] = C.rfc3339(self.clock.wall())
            return True

        try:
            update_status_with_retry(self.jobs_client, ns, name, mutate, current=job)
        except ApiError as exc:
            logger.warning("{} {}/{}: cannot clear the noted problem: {}", self.kind, ns, name, exc)
            return
        logger.info("{} {}/{}: {} resolved", self.kind, ns, name, basis.get("reason"))

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
        # stage, node and pod as JSON fields too, for a log collector to filter on
        fields = {k: v for k, v in (("stage", stage), ("node", node), ("pod", pod)) if v}
        logger.bind(**fields).info(
            "{} {}/{}: stage {} | condition {} -> {} | pod {} | node {}{}",
            self.feature.log_name,
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
        log("{} {}/{}: {}: {}", self.kind, meta.get("namespace"), meta.get("name"), reason, message)
        if warning:
            self.ctx.events.warning(job, reason, message)
        else:
            self.ctx.events.normal(job, reason, message)

    # -- pods ------------------------------------------------------------------------

    def _labels(self, job: Obj, worker_type: str) -> dict[str, str]:
        return generate_labels(job_ref(job), worker_type)

    def job_pods(self, job: Obj, worker_type: str) -> list[Obj]:
        """The job's pods of one worker type: the pods it controls (owner index, so the
        cost follows the job's pods, not the namespace's) that carry Sedna's worker
        labels for it."""
        uid = str(_meta(job).get("uid") or "")
        if not uid:
            return []
        want = self._labels(job, worker_type).items()
        return [
            p
            for p in self.pods.lister.by_owner_uid(uid)
            if want <= (_meta(p).get("labels") or {}).items()
        ]

    def _active(self, job: Obj, worker_type: str) -> list[Obj]:
        return [
            p
            for p in self.job_pods(job, worker_type)
            if _phase(p) in ACTIVE_PHASES and not _deleting(p)
        ]

    def _stage_pod(self, job: Obj, stage: str, latest: Obj) -> Obj | None:
        """The pod of the running stage: the one named in the condition, else the newest
        of the stage's worker type (conditions written by Sedna's Go GM name no pod)."""
        worker_type = self.feature.stage_workers.get(stage)
        if worker_type is None:
            return None
        recorded = recorded_pod(latest)
        if recorded:
            pod = self.pods.lister.get(str(_meta(job).get("namespace")), recorded)
            if (
                pod is not None
                and _meta(pod).get("labels", {}).get(self.worker_type_label) == worker_type
            ):
                return pod
            if stage != C.DEPLOY:
                return None
        if stage == C.DEPLOY:
            active = self._active(job, worker_type)
            if active:
                return _newest(active)
        return _newest([p for p in self.job_pods(job, worker_type) if not _deleting(p)])

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
        recorded = recorded_pod(latest)
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
        key = STAGE_ANNOTATION_PREFIX + stage
        if (_meta(job).get("annotations") or {}).get(key) == node:
            return None
        return self.patch_annotations(job, {key: node})

    def patch_annotations(self, job: Obj, annotations: Mapping[str, str]) -> dict[str, Any]:
        """Set annotations; returns the job as the server now has it, so a status write
        in the same sync can use its resourceVersion."""
        meta = _meta(job)
        try:
            return self.jobs_client.patch(
                str(meta.get("namespace")),
                str(meta.get("name")),
                {"metadata": {"annotations": dict(annotations)}},
            )
        except ApiError as exc:
            keys = ", ".join(sorted(annotations))
            raise StageRetry("AnnotationFailed", f"cannot set annotation {keys}: {exc}") from exc

    def _create(
        self,
        key: str,
        intent: str,
        job: Obj,
        request: PodRequest,
        adoptable: Any = None,
        *,
        since: Any = None,
    ) -> tuple[str, bool]:
        """Create the worker for `intent` (once, even after a lost answer); returns
        (pod name, adopted). `since`: when the intent was asked for; one older than
        this process is first looked up in the API (the cache may not show yet what
        the GM before a restart created)."""
        what = f"{request.param.worker_type} worker"
        meta = _meta(job)

        def create() -> dict[str, Any]:
            return self.ctx.worker_runtime.create_pod_with_template(
                job, request.template, request.param, field=request.field
            )

        try:
            made = self.creations.create(
                key,
                intent,
                namespace=str(meta.get("namespace")),
                owner_uid=str(meta.get("uid")),
                labels=self._labels(job, request.param.worker_type),
                create=create,
                adoptable=adoptable or (lambda pod: True),
                verify=self.creations.predates(since),
            )
        except WorkerError as exc:
            raise StageRetry(
                "WorkerCreateFailed", f"cannot build the {what}: {exc.field}: {exc.message}"
            ) from None
        except ApiError as exc:
            if exc.status == 422:  # the same pod is refused again: wait for a new spec
                raise StageBlocked(
                    "WorkerInvalid", f"the API server refused the {what}: {exc}"
                ) from None
            raise StageRetry("WorkerCreateFailed", f"cannot create the {what}: {exc}") from None
        return str(_meta(made.pod).get("name", "")), made.adopted

    def _ensure_inference_worker(
        self, key: str, job: Obj, spec: Any, pending: _Pending
    ) -> Obj | None:
        """First sync: the inference worker, unless one is Pending or Running.

        The start annotations are (re)applied every time, so a crash or an API error
        between the pod and the annotation heals on the next sync. A created pod goes
        into `pending` (its Event is the caller's); returns the job as patched, if it was.
        """
        basis = "first-sync:" + str(_meta(job).get("uid"))
        worker_type = self.feature.stage_workers[C.DEPLOY]
        with self._lock:
            expected = self._expect.get(key)
        if not (expected is not None and expected.basis == basis) and not self._active(
            job, worker_type
        ):
            request = self.feature.inference_pod(job, spec)
            try:
                name, _ = self._create(
                    key, basis, job, request, since=_meta(job).get("creationTimestamp")
                )
            except StageRetry as exc:
                raise StageRetry("InferenceWorkerFailed", exc.message) from None
            with self._lock:
                self._expect[key] = _Expectation(basis, name)
            pending.created_pod = name
        return self._after_inference_created(job, spec)

    def _after_inference_created(self, job: Obj, spec: Any) -> Obj | None:
        """The feature's start annotations; returns the patched job (None when set)."""
        wanted = self.feature.start_annotations(job, spec)
        have = _meta(job).get("annotations") or {}
        missing = {k: v for k, v in wanted.items() if have.get(k) != v}
        return self.patch_annotations(job, missing) if missing else None

    def _restart_inference_worker(self, key: str, job: Obj, spec: Any, latest: Obj) -> str:
        """Deploy without hot update: replace the inference worker so it loads the new model."""
        basis = _intent(latest)
        with self._lock:
            expected = self._expect.get(key)
        if expected is not None and expected.basis == basis:
            return expected.pod
        request = self.feature.inference_pod(job, spec)
        ns = str(_meta(job).get("namespace"))
        if not self.creations.in_doubt(key, basis):
            for pod in self.job_pods(job, request.param.worker_type):
                if _deleting(pod):
                    continue
                try:
                    self.pods_client.delete(ns, str(_meta(pod).get("name")))
                except NotFound:
                    pass
                except ApiError as exc:
                    raise StageRetry(
                        "InferenceWorkerFailed", f"cannot delete the inference worker: {exc}"
                    ) from None
        try:
            name, _ = self._create(key, basis, job, request, since=latest.get("lastTransitionTime"))
        except StageRetry as exc:
            raise StageRetry("InferenceWorkerFailed", exc.message) from None
        with self._lock:
            self._expect[key] = _Expectation(basis, name)
        self._after_inference_created(job, spec)
        return name

    def _stage_worker(
        self, key: str, job: Obj, spec: Any, stage: str, conds: list[Obj]
    ) -> tuple[str, bool]:
        """The Train/Eval worker for the Ready condition: adopted if one is Pending or
        Running that no earlier condition recorded, else created from the condition's
        inputs. Returns (pod name, adopted)."""
        latest = conds[-1]
        basis = _intent(latest)
        with self._lock:
            expected = self._expect.get(key)
        if expected is not None and expected.basis == basis:
            return expected.pod, False
        served = _served_pod(conds, basis, stage)
        if served:
            return served, True
        worker_type = self.feature.stage_workers[stage]
        # A pod a condition names served an earlier Ready: a worker of an earlier round
        # still running (restartPolicy OnFailure keeps a failed one alive) must not take
        # this round, nor may one that finished (Readies can be alike to the second).
        recorded = {recorded_pod(c) for c in conds} - {""}
        tag = _ready_tag(basis)
        round_ended = _last_round_end(conds)

        def this_round(pod: Obj) -> bool:
            """Not recorded, and either made for this Ready or (untagged: Sedna's Go GM,
            a user) created after the last round ended: trimming may drop the condition
            naming a stale worker, never the end of the round before this Ready."""
            meta = _meta(pod)
            if meta.get("name") in recorded:
                return False
            if (meta.get("annotations") or {}).get(READY_CONDITION_ANNOTATION) == tag:
                return True
            created = C.parse_time(meta.get("creationTimestamp"))
            return round_ended is None or created is None or created >= round_ended

        active = [p for p in self._active(job, worker_type) if this_round(p)]
        if active:
            pod = _newest(active)
            assert pod is not None
            return str(_meta(pod).get("name")), True
        # A pod made for this very Ready but already finished: the GM died between the
        # pod and the Starting write, and the worker ran meanwhile. Sedna would run the
        # stage again; we take its result. Recorded pods lose the tag (`_untag`).

        def made_for_this(pod: Obj) -> bool:
            annotations = _meta(pod).get("annotations") or {}
            return (
                annotations.get(READY_CONDITION_ANNOTATION) == tag
                and _meta(pod).get("name") not in recorded
            )

        made_for = [p for p in self.job_pods(job, worker_type) if not _deleting(p)]
        made_for = [p for p in made_for if made_for_this(p)]
        if made_for:
            pod = _newest(made_for)
            assert pod is not None
            return str(_meta(pod).get("name")), True

        data_field = f"status.conditions[{len(conds) - 1}].data"
        request = self.feature.stage_pod(job, spec, stage, latest, data_field)
        request = PodRequest(
            _annotated(request.template, READY_CONDITION_ANNOTATION, tag),
            request.param,
            request.field,
        )
        name, adopted = self._create(
            key,
            basis,
            job,
            request,
            adoptable=made_for_this,
            since=latest.get("lastTransitionTime"),
        )
        with self._lock:
            self._expect[key] = _Expectation(basis, name)
        return name, adopted


@dataclass
class _DependencyHandler:
    """Events of a dependency's informer: only adds and spec changes matter."""

    machine: StageMachine
    dep: Dependency
    registration: HandlerRegistration | None = None

    def _initial(self) -> bool:
        return self.registration is None or not self.registration.has_synced()

    def on_add(self, obj: Obj) -> None:
        self.machine._dependency_changed(self.dep, None, obj, initial=self._initial())

    def on_update(self, old: Obj, new: Obj) -> None:
        self.machine._dependency_changed(self.dep, old, new, initial=False)

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        pass


def _this_round(conds: list[Obj]) -> list[Obj]:
    """The conditions from the last Train/Waiting on (a Sedna round starts there)."""
    starts = [
        i for i, c in enumerate(conds) if c.get("stage") == C.TRAIN and c.get("type") == C.WAITING
    ]
    return conds[starts[-1] :] if starts else conds


def _behind(conds: list[Obj], content: Any) -> bool:
    """Whether a report (`content`) is behind the job's conditions (see `stale_report`)."""
    if not conds or not isinstance(content, Mapping):
        return False
    stage = str(content.get("phase") or "").capitalize()
    rank = _REPORT_RANK.get(str(content.get("status") or "").lower())
    if stage not in (C.TRAIN, C.EVAL, C.DEPLOY) or rank is None:
        return False
    mine = [c for c in _this_round(conds) if c.get("stage") == stage]
    if not mine:
        return C.NEXT_STAGE.get(stage) == conds[-1].get("stage")
    last = _CONDITION_RANK.get(str(mine[-1].get("type") or ""), 0)
    return rank < last or rank == last == _FINAL_RANK


def _stale(conds: list[Obj], content: Any) -> bool:
    """`_behind`, unless the report brings the data of a stage its worker's exit
    completed first (`late_data`)."""
    return _behind(conds, content) and late_completion(conds, content) is None


_LANDED, _BEHIND = "landed", "behind"


def _already_applied(conds: list[Obj], cond: Obj, content: Any) -> str:
    """Why a report retried after a lost answer must not be appended again: `_LANDED`
    when the job already holds its condition (the machine may have noted a failure on it
    since, so it is compared without the noted fields), `_BEHIND` when the job has moved
    past it (the machine answered the landed report), else "".

    The generic retry compares the write with the stored object as it was sent, and a
    condition the machine noted on in between looked unwritten: the report was
    appended twice, and the second Ready asked for a second worker.
    """
    mine = _intent(cond)
    # this round only: timestamps have a second's resolution, so a quick earlier round's
    # condition (same stage, same report) can look the same
    this_round = _this_round(conds)
    if any(_intent(c) == mine for c in this_round):
        return _LANDED
    data = cond.get("data")
    if carries_data(data) and any(  # filled into the Completed its worker's exit wrote
        c.get("stage") == cond.get("stage")
        and c.get("type") == C.COMPLETED
        and c.get("data") == data
        for c in this_round
    ):
        return _LANDED
    return _BEHIND if _stale(conds, content) else ""


def _served_pod(conds: list[Obj], basis: str, stage: str) -> str:
    """The pod an earlier copy of the latest Ready in this round (the same report,
    written twice) was answered with, else "".

    A Ready applied twice is one request, not two; without this a GM that had adopted
    the first copy's worker from its cache (no expectation) or had restarted since
    made a second worker for the second copy.
    """
    this_round = _this_round(conds)
    for i, cond in enumerate(this_round[:-1]):
        if cond.get("stage") != stage or cond.get("type") != C.READY or _intent(cond) != basis:
            continue
        for later in this_round[i + 1 : -1]:
            pod = recorded_pod(later) if later.get("stage") == stage else ""
            if pod:
                return pod
    return ""
