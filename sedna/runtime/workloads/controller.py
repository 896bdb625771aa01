"""`WorkloadController`: the reconcile loop of an owned-workload feature, written once.

A feature subclasses it, names its resource, and implements `plan(owner)`; the base
does the rest of what Sedna's serving controllers (joint inference, object search,
feature extraction, ...) repeat:

1. read the owner from the cache; skip it when gone or finished (terminal ``Failed``);
2. `plan` it (a `SpecError` becomes a Warning Event and a ``Failed``/``InvalidSpec``
   condition naming the field, cured by an edit; `Waiting` becomes ``Pending``; a
   Secret the spec names that does not exist (`MissingReference`) becomes ``Pending``
   with reason ``SecretNotFound`` and a Warning Event, retried with a backoff as
   Secrets are not watched);
3. `OwnedWorkloads.ensure` the plan (create, adopt, heal, roll out, prune);
4. `decide` the status from what it saw (default: ``Running`` when every Deployment
   is Available, ``Failed`` when one failed, ``Pending`` otherwise), and write it with
   conflict retries; Events on every condition change and every object written.

Owner events and owned-object events (by controller reference) enqueue the owner.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from loguru import logger

from sedna.runtime.context import ControllerContext
from sedna.runtime.controller import Controller, Result
from sedna.runtime.informers import (
    DeletedFinalStateUnknown,
    ResourceEventHandlerFuncs,
    meta_namespace_key,
    split_key,
)
from sedna.runtime.kube import NotFound, Resource
from sedna.runtime.kube.status import update_status_with_retry
from sedna.runtime.workers.errors import MissingReference, WorkerError
from sedna.runtime.workloads.conditions import (
    CONDITION_FAILED,
    CONDITION_PENDING,
    CONDITION_RUNNING,
    REASON_INVALID_SPEC,
    append_condition,
    is_finished,
    latest_condition,
)
from sedna.runtime.workloads.health import deployment_failure_message, deployment_health
from sedna.runtime.workloads.owned import Observed, OwnedWorkloads, OwnerGone, WorkloadConflict
from sedna.runtime.workloads.wants import SpecError, Waiting, WorkloadPlan

__all__ = ["StatusDecision", "WorkloadController"]

Obj = Mapping[str, Any]

REASON_WORKER_FAILED = "workerFailed"  # Sedna's reason, kept for its clients
REASON_WAITING = "WorkersNotAvailable"
REASON_AVAILABLE = "WorkersAvailable"
REASON_CONFLICT = "NameConflict"
# The caches are label-scoped and do not show a foreign object of a planned name go
# away: a conflict is looked at again this often (one create and one get each time).
CONFLICT_RECHECK_SECONDS = 5.0
# A missing Secret is looked for again after 5 s, doubling up to 5 min: Secrets are not
# watched (the GM may only get them), so the retry is what finds one created.
MISSING_RETRY_SECONDS = 5.0
MISSING_RETRY_MAX_SECONDS = 300.0


def missing_retry_after(attempt: int) -> float:
    """The delay before look `attempt` + 1 for a missing object (attempt >= 1)."""
    return min(
        MISSING_RETRY_SECONDS * 2.0 ** min(max(attempt - 1, 0), 16), MISSING_RETRY_MAX_SECONDS
    )


@dataclass(frozen=True)
class StatusDecision:
    """The status a sync arrives at: the condition to hold ("" for none) and the counts.

    `extra` is merged into ``status`` (feature-specific fields). `requeue_after`
    asks for another look (e.g. waiting for something nobody will announce).
    """

    condition: str
    reason: str
    message: str
    active: int
    failed: int
    extra: Mapping[str, Any] = field(default_factory=dict)
    requeue_after: float | None = None


def _rfc3339(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class WorkloadController(Controller):
    """Subclass, pass the owner `resource`, implement `plan`; `start`/`stop` for the manager.

    ``label`` names the kind in logs ("joint inference service"). With ``pods=True`` the
    owner's own pods (not its Deployments') are watched and given to `decide` in
    ``observed.pods``.
    """

    def __init__(
        self,
        ctx: ControllerContext,
        resource: Resource,
        *,
        label: str = "",
        pods: bool = False,
        max_conditions: int = 20,
    ) -> None:
        super().__init__(
            resource.kind,
            workers=ctx.workers,
            metrics=ctx.metrics,
            clock=ctx.clock,
            # an unexpected failure of a sync is a Warning Event on the owner, not only a log
            events=ctx.events,
            informer=ctx.informers.informer(resource),
        )
        self.ctx = ctx
        self.resource = resource
        self.label = label or resource.kind
        self.max_conditions = max_conditions
        # owner key -> consecutive syncs that found a referenced object missing (the
        # backoff); dropped at the first sync that does not, so bounded by the owners
        self._missing_attempts: dict[str, int] = {}
        self.api = ctx.kube.resource(resource)
        self.workloads = OwnedWorkloads(ctx, resource, self.enqueue, pods=pods)
        self.owners = self.workloads.owners
        self.owners.add_event_handler(
            ResourceEventHandlerFuncs(
                add=self._owner_event,
                update=self._owner_updated,
                delete=self._owner_event,
            )
        )

    # -- for subclasses --------------------------------------------------------------

    def plan(self, owner: Obj) -> WorkloadPlan:
        """What `owner` should control now; raise `SpecError` or `Waiting`."""
        raise NotImplementedError

    def decide(self, owner: Obj, plan: WorkloadPlan, observed: Observed) -> StatusDecision:
        """Service-style status from the Deployments' health (see `health`)."""
        failed: list[str] = []
        waiting: list[str] = []
        active = 0
        for name, dep in observed.deployments.items():
            health = deployment_health(dep)
            if health == "Failed" and dep is not None:
                failed.append(f"{name}: {deployment_failure_message(dep)}")
            elif health in ("Available", "Progressing"):
                active += 1
            if health != "Available":
                waiting.append(name)
        if failed:
            return StatusDecision(
                CONDITION_FAILED,
                REASON_WORKER_FAILED,
                "the worker of service failed: " + "; ".join(failed),
                active,
                len(failed),
            )
        if waiting:
            return StatusDecision(
                CONDITION_PENDING,
                REASON_WAITING,
                "waiting for deployment(s) " + ", ".join(waiting) + " to become available",
                active,
                0,
            )
        return StatusDecision(CONDITION_RUNNING, REASON_AVAILABLE, "", active, 0)

    def with_type(self, owner: Obj) -> dict[str, Any]:
        """A shallow copy with kind and apiVersion (list responses carry neither)."""
        out = dict(owner)
        out["kind"] = self.resource.kind
        out["apiVersion"] = self.resource.api_version
        return out

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        self.run()

    def stop(self, drain: bool = False, timeout: float | None = 10.0) -> None:
        super().stop(drain=drain, timeout=timeout)

    # -- events ----------------------------------------------------------------------

    def _owner_updated(self, old: Obj, new: Obj) -> None:
        if _version(old) != _version(new) and self.workloads.echoes.is_echo(new):
            return  # the status our sync wrote: that sync saw everything it shows
        self._owner_event(new)

    def _owner_event(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            self.enqueue(obj.key)
            return
        self.enqueue(meta_namespace_key(obj))

    # -- the sync --------------------------------------------------------------------

    def sync(self, key: str) -> Result | None:
        ns, name = split_key(key)
        missing_before = self._missing_attempts.pop(key, 0)
        cached = self.owners.lister.get(ns, name)
        if cached is None or (cached.get("metadata") or {}).get("deletionTimestamp"):
            return None
        if is_finished(cached):
            return None
        owner = self.with_type(cached)
        try:
            plan = self.plan(owner)
            observed = self.workloads.ensure(owner, plan)
        except MissingReference as exc:
            self._missing_attempts[key] = missing_before + 1
            return self._missing(owner, exc, missing_retry_after(missing_before + 1))
        except SpecError as exc:
            return self._record(owner, self._invalid(owner, exc.field, exc.message))
        except WorkerError as exc:
            return self._record(owner, self._invalid(owner, exc.field, exc.message))
        except OwnerGone:
            return None  # its delete event is on its way; nothing more to do for it
        except WorkloadConflict as exc:
            decision = StatusDecision(
                CONDITION_FAILED,
                REASON_INVALID_SPEC,
                str(exc),
                self._active(owner),
                0,
                requeue_after=CONFLICT_RECHECK_SECONDS,
            )
            return self._record(owner, decision, event_reason=REASON_CONFLICT)
        except Waiting as exc:
            kept = self._keep_running(owner, exc)
            if kept is not None:
                return kept[0]
            decision = StatusDecision(
                CONDITION_PENDING,
                exc.reason,
                f"{exc.field}: {exc.message}",
                self._active(owner),
                0,
                requeue_after=exc.retry_after,
            )
            return self._record(owner, decision)
        for what in observed.created:
            self.ctx.events.normal(owner, "SuccessfulCreate", f"Created {what}")
        for what in observed.updated:
            self.ctx.events.normal(owner, "SuccessfulUpdate", f"Rolled the spec out to {what}")
        for what in observed.deleted:
            self.ctx.events.normal(owner, "SuccessfulDelete", f"Deleted {what}")
        try:
            decision = self.decide(owner, plan, observed)  # bare-pod kinds make pods here
        except MissingReference as exc:
            self._missing_attempts[key] = missing_before + 1
            return self._missing(owner, exc, missing_retry_after(missing_before + 1))
        return self._record(owner, decision, where=_where(plan, observed))

    def _missing(self, owner: Obj, exc: MissingReference, retry_after: float) -> Result | None:
        """A Secret the spec names does not exist: not a spec error (creating it cures
        it), so ``Pending`` naming the field, or the workers kept as they are, and a
        look again after `retry_after` (nothing announces the Secret)."""
        waiting = Waiting(exc.field, exc.reason, exc.message, retry_after=retry_after)
        kept = self._keep_running(owner, waiting)
        if kept is not None:
            result = kept[0]
            if result is None or not result.requeue_after:
                return Result(requeue_after=retry_after)
            return Result(requeue_after=min(result.requeue_after, retry_after))
        decision = StatusDecision(
            CONDITION_PENDING,
            exc.reason,
            f"{exc.field}: {exc.message}",
            self._active(owner),
            0,
            requeue_after=retry_after,
        )
        return self._record(owner, decision, warn=True)

    def _keep_running(self, owner: Obj, exc: Waiting) -> tuple[Result | None] | None:
        """Something the plan needs went missing after the workers were made (a Model
        deleted): they run on as they are, and the status follows them. Only an owner
        without workers waits (``Pending``)."""
        existing = self.workloads.owned(self.workloads.deployment_informer, owner)
        if not existing:
            return None
        meta = owner.get("metadata") or {}
        logger.warning(
            "{} {}/{}: {}: {}; the workers are kept as they are",
            self.label, meta.get("namespace"), meta.get("name"), exc.field, exc.message,
        )  # fmt: skip
        observed = Observed(deployments={str(d["metadata"]["name"]): d for d in existing})
        return (self._record(owner, self.decide(owner, WorkloadPlan(), observed)),)

    def _active(self, owner: Obj) -> int:
        return int((owner.get("status") or {}).get("active") or 0)

    def _invalid(self, owner: Obj, field_: str, message: str) -> StatusDecision:
        return StatusDecision(
            CONDITION_FAILED, REASON_INVALID_SPEC, f"{field_}: {message}", self._active(owner), 0
        )

    def _record(
        self,
        owner: Obj,
        decision: StatusDecision,
        *,
        event_reason: str = "",
        where: Mapping[str, str] | None = None,
        warn: bool = False,
    ) -> Result | None:
        """Write `decision`; a condition it appends is announced (a Warning Event when
        Failed or `warn`)."""
        now = _rfc3339(self.ctx.clock.wall())
        appended: list[Mapping[str, Any]] = []
        before = latest_condition(owner.get("status"))

        def mutate(fresh: dict[str, Any]) -> bool:
            nonlocal before
            appended.clear()
            # what the write follows: after a conflict, the fresh object, not the cache's
            before = latest_condition(fresh.get("status"))
            status = dict(fresh.get("status") or {})
            old = json_like(status)
            status.setdefault("startTime", now)
            if decision.condition and append_condition(
                status,
                decision.condition,
                decision.reason,
                decision.message,
                now,
                limit=self.max_conditions,
            ):
                appended.append(status["conditions"][-1])
            status["active"] = decision.active
            status["failed"] = decision.failed
            status.update(decision.extra)
            if status == old:
                return False
            fresh["status"] = status
            return True

        ns = str(owner["metadata"].get("namespace") or "")
        name = str(owner["metadata"]["name"])
        try:
            written = update_status_with_retry(self.api, ns, name, mutate, current=owner)
        except NotFound:
            return None
        self.workloads.echoes.record_status_write(written, owner)
        if appended:
            self._announce(
                owner, before, appended[-1], decision, event_reason, where or {}, warn=warn
            )
        if decision.requeue_after:
            return Result(requeue_after=decision.requeue_after)
        return None

    def _announce(
        self,
        owner: Obj,
        before: Mapping[str, Any] | None,
        cond: Mapping[str, Any],
        decision: StatusDecision,
        event_reason: str,
        where: Mapping[str, str],
        *,
        warn: bool = False,
    ) -> None:
        meta = owner.get("metadata") or {}
        was = str(before.get("type")) if before else "-"
        logger.bind(**where).info(
            "{} {}/{}: condition {} -> {} | active {} failed {}{}",
            self.label,
            meta.get("namespace"),
            meta.get("name"),
            was,
            cond["type"],
            decision.active,
            decision.failed,
            f" | {cond['message']}" if cond.get("message") else "",
        )
        reason = event_reason or str(cond.get("reason") or cond["type"])
        message = str(cond.get("message") or f"{self.resource.kind} is {cond['type']}")
        if before is None and not warn and reason == REASON_WAITING:
            # A new owner's first condition, waiting for the workers its pass has just
            # made: the pass's SuccessfulCreate Event says that much (one write a job).
            return
        if cond["type"] == CONDITION_FAILED or warn:
            self.ctx.events.warning(owner, reason, message)
        else:
            self.ctx.events.normal(owner, reason, message)


def _version(obj: Obj) -> object:
    return (obj.get("metadata") or {}).get("resourceVersion")


def _where(plan: WorkloadPlan, observed: Observed) -> dict[str, str]:
    """The ``node`` and ``pod`` JSON log fields of a status change, where known: the nodes
    the plan's templates name and the owner's bare pods run on, the bare pods' names
    (comma-separated, sorted). A service has no stage: none is bound."""
    nodes: set[str] = set()
    for want in plan.deployments:
        spec = (want.spec.get("template") or {}).get("spec") or {}
        if isinstance(spec, Mapping) and isinstance(spec.get("nodeName"), str):
            nodes.add(spec["nodeName"])
    pods: list[str] = []
    for pod in observed.pods:
        meta = pod.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            continue
        pods.append(str(meta.get("name") or ""))
        node = (pod.get("spec") or {}).get("nodeName")
        if isinstance(node, str) and node:
            nodes.add(node)
    fields = {"node": ",".join(sorted(n for n in nodes if n)), "pod": ",".join(sorted(pods))}
    return {k: v for k, v in fields.items() if v}


def json_like(status: Mapping[str, Any]) -> dict[str, Any]:
    """A copy deep enough to compare against after `mutate` edits the status in place."""
    out = dict(status)
    if isinstance(out.get("conditions"), list):
        out["conditions"] = [dict(c) if isinstance(c, Mapping) else c for c in out["conditions"]]
    return out
