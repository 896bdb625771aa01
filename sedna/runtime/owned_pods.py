"""Bare worker pods an owner controls, beside its Deployments: created, healed, counted.

The workload family (`sedna.runtime.workloads`) makes Deployments, Services and HPAs
match a plan; four of Sedna's multi-edge kinds also run pods of their own (the
tracking workers of ObjectSearchService and ObjectTrackingService, the single worker of
ReidJob and VideoAnalyticsJob). `PodWorkloadController` adds them to the family's loop:
`plan` puts `PodWant`s in ``WorkloadPlan.pods``, and before deciding the
status the controller makes each want have exactly one pod.

- A pod is found by its want's key (annotation ``sedna-gm.io/worker-key``), never by
  its generated name (Sedna's ``<owner>-<type>-<random>``), so a restart adopts what it
  finds and creates nothing twice.
- A create not yet seen in the cache is expected for a while (client-go's controller
  expectations), so two syncs in a row never make two pods for one want. The pod's
  DELETE event ends the expectation (client-go lowers it in its pod handlers): a pod
  deleted before any sync saw it in the cache is made again at once, not after the
  expectation's 300 s. A DELETE seen even before the create's answer is remembered
  (by pod UID, bounded), so it ends the expectation the create would record.
- A create whose answer was lost (a 5xx or a timeout after the write committed) is
  retried only after reading the API, not the cache, for the pod it may have made
  (`PodCreations`): the pod found is adopted, no second one is made.
- A deleted pod is made again (self-healing); a pod whose template changed (hash in
  ``sedna-gm.io/spec-hash``) is deleted and made again; a pod no want names is deleted.
- A pod that ended (``Succeeded``/``Failed``) is left as it is and counted: the status
  style (`service_decision`, `job_decision`) says what that means for the owner.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

from loguru import logger

from sedna.runtime.context import ControllerContext
from sedna.runtime.controller import Result
from sedna.runtime.informers import (
    DeletedFinalStateUnknown,
    ResourceEventHandlerFuncs,
    SharedInformer,
    split_key,
)
from sedna.runtime.kube import PODS, Invalid, NotFound, Resource, WriteEchoes
from sedna.runtime.worker_reports import REASON_WORKER_RUNNING
from sedna.runtime.workers.creations import CreatedPod, PodCreations
from sedna.runtime.workers.errors import MissingReference, WorkerError
from sedna.runtime.workers.labels import generate_labels, job_ref
from sedna.runtime.workloads.conditions import (
    CONDITION_FAILED,
    CONDITION_PENDING,
    CONDITION_RUNNING,
    REASON_INVALID_SPEC,
    latest_condition,
)
from sedna.runtime.workloads.controller import StatusDecision, WorkloadController
from sedna.runtime.workloads.health import deployment_failure_message, deployment_health
from sedna.runtime.workloads.owned import (
    SPEC_HASH_ANNOTATION,
    Observed,
    controller_of,
    refused_field,
    spec_hash,
)
from sedna.runtime.workloads.wants import PodWant, Waiting, WorkloadPlan

__all__ = [
    "CONDITION_COMPLETED",
    "POD_KEY_ANNOTATION",
    "OwnedPods",
    "PodWant",
    "PodWorkloadController",
    "PodsSeen",
    "job_decision",
    "service_decision",
    "stable_worker_name",
]

Obj = Mapping[str, Any]

POD_KEY_ANNOTATION = "sedna-gm.io/worker-key"
CONDITION_COMPLETED = "Completed"
EXPECTATION_SECONDS = 300.0  # client-go's ExpectationsTimeout
DELETES_REMEMBERED = 1024  # pod UIDs deleted before their create's answer was handled
REASON_WORKER_FAILED = "workerFailed"  # Sedna's reason
# Sedna's objectsearch reasons: a tracking pod failed (checked first), a Deployment did
REASON_POD_FAILED = "podFailed"
REASON_DEPLOYMENT_FAILED = "deploymentFailed"


def stable_worker_name(owner: Obj, prefix: str, index: int = 0) -> str:
    """``<prefix><5 characters>`` derived from the owner's UID, for ``WORKER_NAME``.

    Sedna draws the five characters at random on each create; derived ones stay the same
    on every sync, so rendering a worker twice gives the same spec (no roll-out) and a
    healed worker keeps its name.
    """
    uid = str((owner.get("metadata") or {}).get("uid") or "")
    digest = hashlib.sha256(f"{uid}/{prefix}/{index}".encode()).digest()
    alphabet = "bcdfghjklmnpqrstvwxz2456789"  # k8s' utilrand alphabet
    return prefix + "".join(alphabet[b % len(alphabet)] for b in digest[:5])


@dataclass
class PodsSeen:
    """The owner's pods by want, after `OwnedPods.ensure`.

    `active`: existing, not ended, not being deleted (or just created); `running`: of
    those, in phase Running; `failed`/`succeeded`: ended pods of current wants.
    """

    active: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    failed_messages: list[str] = field(default_factory=list)
    succeeded_messages: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)


def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _annotation(pod: Obj, key: str) -> str | None:
    value = (_meta(pod).get("annotations") or {}).get(key)
    return value if isinstance(value, str) else None


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


@dataclass(frozen=True)
class _Expected:
    """A pod made and not yet seen in the cache."""

    name: str
    uid: str
    deadline: float


class OwnedPods:
    """Makes an owner's bare pods match its `PodWant`s; one per feature controller.

    Given the pod informer and the controller's ``enqueue``, it watches the pods' DELETE
    events: one of a pod still expected ends the expectation and enqueues the owner
    (without them an expected pod deleted before a sync saw it is made again only when
    the expectation expires).
    """

    def __init__(
        self,
        ctx: ControllerContext,
        *,
        pods: SharedInformer | None = None,
        enqueue: Callable[[str], None] | None = None,
        echoes: WriteEchoes | None = None,
    ) -> None:
        """`echoes`: where the pods made are recorded, so that their watch events wake
        no second sync of the owner (the owner's controller's `WriteEchoes`)."""
        self.ctx = ctx
        self._echoes = echoes
        self.api = ctx.kube.resource(PODS)
        # (owner uid, want key) -> the pod made and not yet cached; shared by the
        # controller's worker threads and the informer's dispatch thread
        self._expected: dict[tuple[str, str], _Expected] = {}
        # UIDs of pods whose DELETE came while no expectation named them (bounded)
        self._deleted: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self._enqueue = enqueue
        # creates whose answer was lost, by "<owner uid>/<want key>" and spec hash
        self.creations = PodCreations(self.api, started=ctx.clock.wall())
        if pods is not None:
            pods.add_event_handler(ResourceEventHandlerFuncs(delete=self._pod_deleted))

    def expecting(self, owner_uid: str, key: str) -> bool:
        """Whether a pod made for this want is still expected in the cache."""
        with self._lock:
            return (owner_uid, key) in self._expected

    def _pod_deleted(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if not isinstance(pod, Mapping):
            return
        meta = _meta(pod)
        ref = controller_of(pod)
        pod_uid = str(meta.get("uid") or "")
        if ref is None or not pod_uid:
            return
        slot = (str(ref.get("uid") or ""), _annotation(pod, POD_KEY_ANNOTATION) or "")
        with self._lock:
            expected = self._expected.get(slot)
            if expected is None or expected.uid != pod_uid:
                self._deleted[pod_uid] = None
                while len(self._deleted) > DELETES_REMEMBERED:
                    self._deleted.popitem(last=False)
                return
            del self._expected[slot]
        logger.debug(
            "pod {}/{} was deleted before a sync saw it: no longer expected",
            meta.get("namespace"), meta.get("name"),
        )  # fmt: skip
        if self._enqueue is not None:
            self._enqueue(f"{meta.get('namespace') or ''}/{ref.get('name') or ''}")

    def _expect(self, owner_uid: str, key: str, pod: Obj, now: float) -> None:
        pod_uid = str(_meta(pod).get("uid") or "")
        with self._lock:
            if pod_uid and pod_uid in self._deleted:
                del self._deleted[pod_uid]  # already gone: nothing to wait for
                return
            name = str(_meta(pod).get("name") or "")
            self._expected[(owner_uid, key)] = _Expected(name, pod_uid, now + EXPECTATION_SECONDS)

    def _template_with_identity(self, want: PodWant, want_hash: str) -> dict[str, Any]:
        template = copy.deepcopy(dict(want.template))
        meta = dict(template.get("metadata") or {})
        template["metadata"] = meta
        annotations = dict(meta.get("annotations") or {})
        annotations[POD_KEY_ANNOTATION] = want.key
        annotations[SPEC_HASH_ANNOTATION] = want_hash
        meta["annotations"] = annotations
        return template

    def _want_hash(self, owner: Obj, want: PodWant) -> str:
        pod = self.ctx.worker_runtime.build_pod(owner, want.template, want.param, field=want.field)
        return spec_hash({"spec": pod.get("spec"), "labels": _meta(pod).get("labels")})

    def ensure(
        self,
        owner: Obj,
        wants: Sequence[PodWant],
        pods: Sequence[Obj],
        *,
        create: bool = True,
        seen: PodsSeen | None = None,
    ) -> PodsSeen:
        """Create, replace and delete pods so each want has one; count them into `seen`.

        With ``create=False`` (an owner that has finished) nothing is created or
        deleted, the pods are only counted. Raises the runtime's `WorkerError` for a
        template it cannot use, and API errors (the sync is retried); a `seen` passed
        in still names what was created or deleted before the error.
        """
        uid = str(_meta(owner).get("uid") or "")
        ns = str(_meta(owner).get("namespace") or "")
        seen = PodsSeen() if seen is None else seen
        by_key: dict[str, list[Obj]] = {}
        for pod in pods:
            by_key.setdefault(_annotation(pod, POD_KEY_ANNOTATION) or "", []).append(pod)
        now = self.ctx.clock.now()
        with self._lock:
            # expired expectations go (an owner deleted before its pod was seen): bounded
            for k in [k for k, e in self._expected.items() if e.deadline <= now]:
                del self._expected[k]
        keys = {w.key for w in wants}
        for want in wants:
            want_hash = self._want_hash(owner, want)
            current = [p for p in by_key.get(want.key, []) if not _meta(p).get("deletionTimestamp")]
            if current:
                with self._lock:
                    self._expected.pop((uid, want.key), None)
            live = [p for p in current if _phase(p) not in ("Succeeded", "Failed")]
            ended = [p for p in current if _phase(p) in ("Succeeded", "Failed")]
            if create:
                for pod in live:
                    if _annotation(pod, SPEC_HASH_ANNOTATION) != want_hash:
                        self._delete(ns, pod, seen, "its template changed")
                live = [p for p in live if _annotation(p, SPEC_HASH_ANNOTATION) == want_hash]
                for extra in live[1:]:
                    self._delete(ns, extra, seen, "a second pod for one worker")
                live = live[:1]
            if _count_worker(live, ended, seen):
                continue
            with self._lock:
                expected = self._expected.get((uid, want.key))
            if expected is not None and expected.deadline > now:
                logger.debug(
                    "{}/{}: pod {} for {} is made and not yet cached: not made again",
                    ns, _meta(owner).get("name"), expected.name, want.key,
                )  # fmt: skip
                seen.active += 1
                continue
            if not create:
                continue
            try:
                made = self._create(owner, want, want_hash)
            except Invalid as exc:  # a template the API server refuses: the spec's fault
                field_, message = refused_field(exc, want.field, want.field)
                raise job_ref(owner).error(field_, message) from None
            name = str(_meta(made.pod).get("name") or "")
            if self._echoes is not None and not made.adopted:
                self._echoes.record(made.pod)
            self._expect(uid, want.key, made.pod, now)
            seen.created.append(f"Pod {name}")
            seen.active += 1
            how = (
                "adopted pod {} (found at the API: a create whose answer was lost, or one"
                " made before a restart)"
                if made.adopted
                else "made pod {}"
            )
            logger.info(
                "{} {}/{}: " + how + " for {}",
                owner.get("kind"), ns, _meta(owner).get("name"), name, want.key,
            )  # fmt: skip
        if create:
            for key, stale in by_key.items():
                if key in keys:
                    continue
                for pod in stale:
                    if not _meta(pod).get("deletionTimestamp"):
                        self._delete(ns, pod, seen, "no worker of the spec names it")
        return seen

    def _create(self, owner: Obj, want: PodWant, want_hash: str) -> CreatedPod:
        """The want's pod, made once even when a create's answer is lost: before a retry
        the API (not the cache) is read for the pod of this key and hash."""
        meta = _meta(owner)
        uid = str(meta.get("uid") or "")
        template = self._template_with_identity(want, want_hash)

        def create() -> dict[str, Any]:
            return self.ctx.worker_runtime.create_pod_with_template(
                owner, template, want.param, field=want.field
            )

        def adoptable(pod: Mapping[str, Any]) -> bool:
            return (
                _annotation(pod, POD_KEY_ANNOTATION) == want.key
                and _annotation(pod, SPEC_HASH_ANNOTATION) == want_hash
            )

        return self.creations.create(
            f"{uid}/{want.key}",
            want_hash,
            namespace=str(meta.get("namespace") or ""),
            owner_uid=uid,
            labels=generate_labels(job_ref(owner), want.worker_type),
            create=create,
            adoptable=adoptable,
            # an owner older than the process: the GM before a restart may have made its
            # pod, committed after this process listed (one LIST per such create)
            verify=self.creations.predates(meta.get("creationTimestamp")),
        )

    def _delete(self, ns: str, pod: Obj, seen: PodsSeen, why: str) -> None:
        name = str(_meta(pod).get("name") or "")
        with contextlib.suppress(NotFound):
            self.api.delete(ns, name)
            seen.deleted.append(f"Pod {name}")
            logger.info("deleted pod {}/{}: {}", ns, name, why)


def _count_worker(live: Sequence[Obj], ended: Sequence[Obj], seen: PodsSeen) -> bool:
    """Count one worker into `seen`: its first live pod, else its last ended one; False
    when it has neither."""
    if live:
        seen.active += 1
        if _phase(live[0]) == "Running":
            seen.running += 1
        return True
    if not ended:
        return False
    last = ended[-1]
    if _phase(last) == "Succeeded":
        seen.succeeded += 1
        seen.succeeded_messages.append(f"pod {_meta(last).get('name')}: exited")
    else:
        seen.failed += 1
        reason = (last.get("status") or {}).get("reason") or "Failed"
        seen.failed_messages.append(f"pod {_meta(last).get('name')}: {reason}")
    return True


def _count_pods(pods: Sequence[Obj]) -> tuple[PodsSeen, int]:
    """`PodsSeen` of the pods as they are, one worker per key annotation, and how many
    workers that is: the count for an owner whose plan cannot be made now."""
    by_key: dict[str, list[Obj]] = {}
    for pod in pods:
        if not _meta(pod).get("deletionTimestamp"):
            by_key.setdefault(_annotation(pod, POD_KEY_ANNOTATION) or "", []).append(pod)
    seen = PodsSeen()
    for current in by_key.values():
        live = [p for p in current if _phase(p) not in ("Succeeded", "Failed")]
        ended = [p for p in current if _phase(p) in ("Succeeded", "Failed")]
        _count_worker(live, ended, seen)
    return seen, len(by_key)


def _deployment_counts(observed: Observed) -> tuple[int, list[str], list[str]]:
    active = 0
    failed: list[str] = []
    waiting: list[str] = []
    for name, dep in observed.deployments.items():
        health = deployment_health(dep)
        if health == "Failed" and dep is not None:
            failed.append(f"deployment {name}: {deployment_failure_message(dep)}")
        elif health in ("Available", "Progressing"):
            active += 1
        if health != "Available":
            waiting.append(f"deployment {name}")
    return active, failed, waiting


def service_decision(observed: Observed, pods: PodsSeen, wanted_pods: int) -> StatusDecision:
    """Service style (ObjectSearchService, ObjectTrackingService): pods and Deployments.

    As in Sedna, ``active`` counts active pods plus active Deployments and a worker that
    failed or ended makes the service terminally ``Failed``, with Sedna's reason:
    ``podFailed`` when a pod did (Sedna looks at pods first), else ``deploymentFailed``
    (clients tell the two apart by it); unlike Sedna, ``Running`` waits until
    every Deployment is Available and every pod runs (``Pending`` before), and a pod
    deleted by someone is made again instead of failing the service.
    """
    dep_active, dep_failed, waiting = _deployment_counts(observed)
    # a service worker that ended, even with success, serves no more: a failure, as Sedna
    # counts it (needed pods minus active ones)
    pod_failures = pods.failed_messages + pods.succeeded_messages
    failures = pod_failures + dep_failed
    active = pods.active + dep_active
    if failures:
        return StatusDecision(
            CONDITION_FAILED,
            REASON_POD_FAILED if pod_failures else REASON_DEPLOYMENT_FAILED,
            "the worker of service failed: " + "; ".join(failures),
            active,
            len(failures),
        )
    if pods.running < wanted_pods:
        waiting.append(f"{wanted_pods - pods.running} of {wanted_pods} pod(s)")
    if waiting:
        return StatusDecision(
            CONDITION_PENDING,
            "WorkersNotAvailable",
            "waiting for " + ", ".join(waiting) + " to run",
            active,
            0,
        )
    return StatusDecision(CONDITION_RUNNING, "WorkersAvailable", "", active, 0)


def job_decision(owner: Obj, pods: PodsSeen, now: str) -> StatusDecision:
    """Job style (ReidJob, VideoAnalyticsJob): ``phase``, ``succeeded``, ``completionTime``.

    Sedna's rules: a failed pod fails the job (terminal); a succeeded pod with none
    active completes it (``Completed``, ``completionTime``, phase ``Succeeded``);
    otherwise its phase is ``Running``. Like Sedna, a running job gets no condition of
    its own: its conditions are ``Completed`` and ``Failed``. Only a job that already
    has a condition saying otherwise (``Pending`` while it waited for its Model, a
    spec error since fixed) gets ``Running`` over it, so that the latest condition
    never contradicts the phase. A completed job keeps its status even if its pod is
    deleted later.
    """
    status = owner.get("status") or {}
    latest = latest_condition(status)
    if latest is not None and latest.get("type") == CONDITION_COMPLETED:
        return StatusDecision(
            CONDITION_COMPLETED,
            str(latest.get("reason") or ""),
            str(latest.get("message") or ""),
            int(status.get("active") or 0),
            int(status.get("failed") or 0),
            extra={"phase": "Succeeded", "succeeded": int(status.get("succeeded") or 0)},
        )
    counts = {"succeeded": pods.succeeded}
    if pods.failed:
        return StatusDecision(
            CONDITION_FAILED,
            REASON_WORKER_FAILED,
            "the worker of the job failed: " + "; ".join(pods.failed_messages),
            pods.active,
            pods.failed,
            extra={"phase": "Failed", **counts},
        )
    if pods.succeeded and not pods.active:
        return StatusDecision(
            CONDITION_COMPLETED,
            "Completed",
            "",
            0,
            0,
            extra={"phase": "Succeeded", "completionTime": now, **counts},
        )
    # "" appends no condition (`WorkloadController._record`)
    running = CONDITION_RUNNING if latest is not None else ""
    return StatusDecision(
        running, REASON_WORKER_RUNNING, "", pods.active, 0, extra={"phase": "Running", **counts}
    )


# a job's phase for a condition not of `job_decision` (Sedna's phases: Pending, Running,
# Succeeded, Failed)
_JOB_PHASES = {
    CONDITION_PENDING: "Pending",
    CONDITION_RUNNING: "Running",
    CONDITION_FAILED: "Failed",
    CONDITION_COMPLETED: "Succeeded",
}


def _completed(owner: Obj) -> bool:
    return (latest_condition(owner.get("status")) or {}).get("type") == CONDITION_COMPLETED


class PodWorkloadController(WorkloadController):
    """`WorkloadController` with bare pods: put `PodWant`s in ``plan.pods``.

    ``job_style`` selects `job_decision` (else `service_decision`). The pods are made
    before the status is decided; Events name each created or deleted pod.
    """

    def __init__(
        self,
        ctx: ControllerContext,
        resource: Resource,
        *,
        label: str = "",
        job_style: bool = False,
        max_conditions: int = 20,
    ) -> None:
        super().__init__(ctx, resource, label=label, pods=True, max_conditions=max_conditions)
        self.job_style = job_style
        self.owned_pods = OwnedPods(
            ctx,
            pods=self.workloads.pod_informer,
            enqueue=self.enqueue,
            echoes=self.workloads.echoes,
        )

    def sync(self, key: str) -> Result | None:
        """As the family's, and a job-style owner that has ``Completed`` is finished too."""
        if self.job_style:
            ns, name = split_key(key)
            cached = self.owners.lister.get(ns, name)
            if cached is not None and _completed(cached):
                return None
        return super().sync(key)

    def _record(
        self,
        owner: Obj,
        decision: StatusDecision,
        *,
        event_reason: str = "",
        where: Mapping[str, str] | None = None,
        warn: bool = False,
    ) -> Result | None:
        """As the family's; a job's status also carries ``phase`` and ``succeeded`` when
        the decision is not `job_decision`'s (waiting for a Model, a bad spec), as
        Sedna's job status has both from the first sync on."""
        if self.job_style and "phase" not in decision.extra:
            status = owner.get("status") or {}
            extra = {
                "phase": _JOB_PHASES.get(decision.condition, "Pending"),
                "succeeded": int(status.get("succeeded") or 0),
                **decision.extra,
            }
            decision = dataclasses.replace(decision, extra=extra)
        return super()._record(owner, decision, event_reason=event_reason, where=where, warn=warn)

    def _keep_running(self, owner: Obj, exc: Waiting) -> tuple[Result | None] | None:
        """As the family's, and bare pods count as workers made: a Model or Secret gone
        after the pods were made leaves them as they are (Sedna looks at neither once
        its pods exist), and the status follows them, to ``Completed`` or ``Failed``.
        Nothing is created or deleted without a plan."""
        pods = [p for p in self.workloads.pods_of(owner) if not _meta(p).get("deletionTimestamp")]
        deployments = self.workloads.owned(self.workloads.deployment_informer, owner)
        if not pods and not deployments:
            return None
        meta = _meta(owner)
        logger.warning(
            "{} {}/{}: {}: {}; the workers are kept as they are",
            self.label, meta.get("namespace"), meta.get("name"), exc.field, exc.message,
        )  # fmt: skip
        observed = Observed(
            deployments={str(d["metadata"]["name"]): d for d in deployments}, pods=pods
        )
        seen, workers = _count_pods(pods)
        if self.job_style:
            now = self.ctx.clock.wall().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            decision = job_decision(owner, seen, now)
        else:
            decision = service_decision(observed, seen, workers)
        return (self._record(owner, decision),)

    def decide(self, owner: Obj, plan: WorkloadPlan, observed: Observed) -> StatusDecision:
        wants: Sequence[PodWant] = plan.pods
        finished = self.job_style and _completed(owner)
        pods = PodsSeen()
        try:
            self.owned_pods.ensure(owner, wants, observed.pods, create=not finished, seen=pods)
        except MissingReference:
            raise  # not a spec error: the family waits for it (Pending, retried)
        except WorkerError as exc:  # a template or secret the runtime cannot use
            active = int((owner.get("status") or {}).get("active") or 0)
            return StatusDecision(
                CONDITION_FAILED, REASON_INVALID_SPEC, f"{exc.field}: {exc.message}", active, 0
            )
        finally:  # what was made before an error is announced too
            for what in pods.created:
                self.ctx.events.normal(owner, "SuccessfulCreate", f"Created {what}")
            for what in pods.deleted:
                self.ctx.events.normal(owner, "SuccessfulDelete", f"Deleted {what}")
        if self.job_style:
            now = self.ctx.clock.wall().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            return job_decision(owner, pods, now)
        return service_decision(observed, pods, len(wants))
