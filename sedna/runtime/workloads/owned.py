"""`OwnedWorkloads`: make an owner's Deployments, Services and HPAs match its plan.

Level-triggered and idempotent, from the informer caches:

- a missing object is created; as names are fixed (``<owner>-deployment-<type>``,
  ``<owner>-<type>``, ``hpa-<deployment>``), a create whose response was lost answers
  ``AlreadyExists`` next time and the object is adopted if our owner controls it, so a
  GM killed at any point never makes a second one;
- a deleted object is recreated on the next sync: owned objects map back to their
  owner through the controller owner reference (kind and UID checked), never by
  splitting names (Sedna's Go GM cuts a Deployment's name at ``-deployment``, which
  breaks on owners whose own name holds that word);
- a changed spec is rolled out: each object carries the hash of the spec it was built
  from (``sedna-gm.io/spec-hash``); a different hash updates the object in place
  (template, replicas when the plan sets them, labels), with conflict retries;
- an object the owner controls that the plan no longer names is deleted.

An object of a planned name that someone else controls is never touched:
`WorkloadConflict` names it.

The caches hold only what the owner's kind makes: each informer is scoped by Sedna's
label ``<owner kind lower>.<group>/name`` (``owned_by_kind``), which every object made
here carries, so a cluster's other Deployments, Services and HPAs cost nothing. A
foreign object of a planned name is therefore found through the API (the create
answers ``AlreadyExists``, the object is read) and still raises `WorkloadConflict`. An
object the owner controls that lacks the label (made by an older GM, or relabelled by
hand) is invisible to the cache: the owner's next sync meets it the same way, adopts it
and puts Sedna's labels back, after which it is cached again. Until then it is not
pruned; one the plan no longer names is left to the garbage collector, which deletes
it with its owner.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
from loguru import logger

from sedna.runtime.informers import DeletedFinalStateUnknown, SharedInformer, meta_namespace_key
from sedna.runtime.kube import (
    DEPLOYMENTS,
    HPAS,
    SERVICES,
    AlreadyExists,
    Invalid,
    NotFound,
    Resource,
    ResourceClient,
)
from sedna.runtime.kube.echoes import WriteEchoes
from sedna.runtime.kube.jsoncopy import json_deepcopy
from sedna.runtime.kube.status import update_with_retry
from sedna.runtime.workers.deployments import deployment_name
from sedna.runtime.workers.hpa import apply_hpa_spec, build_hpa, hpa_name
from sedna.runtime.workers.labels import JobRef, job_ref
from sedna.runtime.workers.services import (
    build_edgemesh_service,
    build_nodeport_service,
    service_name,
)
from sedna.runtime.workloads.wants import DeploymentWant, HPAWant, ServiceWant, WorkloadPlan

if TYPE_CHECKING:
    from sedna.runtime.context import ControllerContext

__all__ = [
    "SPEC_HASH_ANNOTATION",
    "Observed",
    "OwnedWorkloads",
    "OwnerGone",
    "WorkloadConflict",
    "controller_of",
    "ensure_service",
    "spec_hash",
]

SPEC_HASH_ANNOTATION = "sedna-gm.io/spec-hash"

Obj = Mapping[str, Any]


class WorkloadConflict(Exception):
    """An object of a name the plan needs exists and is not controlled by the owner."""

    def __init__(self, kind: str, namespace: str, name: str, field: str) -> None:
        super().__init__(
            f"{field}: {kind} {namespace}/{name} exists and is not controlled by this object"
        )
        self.kind = kind
        self.name = name
        self.field = field


def refused_field(exc: Invalid, under: str, fallback: str, strip: str = "") -> tuple[str, str]:
    """The owner's field and the message of a create or update the API server refused
    (422), from the first cause naming a field: that field less `strip`, under `under`
    (a pod's ``spec.containers[0].ports`` under ``spec.template``); `fallback` when no
    cause names one within. Retrying would meet the same refusal: the spec's error."""
    details = exc.body.get("details")
    causes = details.get("causes") if isinstance(details, Mapping) else None
    for cause in causes if isinstance(causes, list) else []:
        if not isinstance(cause, Mapping) or not isinstance(cause.get("field"), str):
            continue
        at = str(cause["field"])
        message = str(cause.get("message") or exc.message or "refused by the API server")
        if at and at.startswith(strip):
            return f"{under}.{at[len(strip) :]}", message
        if at:
            return fallback, f"{at}: {message}"
    return fallback, f"refused by the API server: {exc.message or exc}"


def spec_hash(spec: Obj) -> str:
    """A short stable hash of a desired spec (key order does not matter)."""
    raw = orjson.dumps(spec, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(raw).hexdigest()[:16]


def controller_of(obj: Obj) -> Obj | None:
    """The owner reference marked ``controller: true`` (client-go's ``GetControllerOf``)."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


def _controlled_by(obj: Obj, uid: str) -> bool:
    ref = controller_of(obj)
    return ref is not None and ref.get("uid") == uid


def _annotated_hash(obj: Obj) -> str | None:
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(SPEC_HASH_ANNOTATION)
    return value if isinstance(value, str) else None


def _version(obj: Obj) -> object:
    return (obj.get("metadata") or {}).get("resourceVersion")


def _always_live() -> bool:
    return True


def _set_hash(obj: dict[str, Any], value: str) -> None:
    obj.setdefault("metadata", {}).setdefault("annotations", {})[SPEC_HASH_ANNOTATION] = value


@dataclass
class Observed:
    """What `ensure` saw or wrote, for the owner's status.

    `deployments` maps each planned Deployment name to its latest object (None when a
    create is still to be seen). `created`/`updated`/`deleted` name what this pass
    changed, as ``Kind name``.
    """

    deployments: dict[str, Obj | None] = field(default_factory=dict)
    service_hosts: dict[str, str] = field(default_factory=dict)
    node_ports: dict[str, int] = field(default_factory=dict)
    pods: list[Obj] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    # told at once of what each create or update of the pass returned (the owner's
    # `WriteEchoes`: before the write's watch event is handled, where it can be)
    on_write: Callable[[Obj], None] | None = None

    def wrote(self, obj: Obj) -> None:
        if self.on_write is not None:
            self.on_write(obj)


class OwnerGone(Exception):
    """The owner is gone from the server (or being deleted) while the cache still holds
    it: nothing is created for it."""


def create_or_adopt(
    api: ResourceClient,
    informer: SharedInformer,
    ref: JobRef,
    desired: dict[str, Any],
    field: str,
    seen: Observed,
    owner_live: Callable[[], bool] | None = None,
) -> tuple[Obj, bool]:
    """The existing object (cache, else server after AlreadyExists), or the created one.

    The bool says whether it was created now. One of that name the owner does not
    control raises `WorkloadConflict` naming `field`. Before a create, `owner_live`
    (a read of the owner from the server) may say the owner is gone: `OwnerGone`.
    """
    name = desired["metadata"]["name"]
    kind = desired["kind"]
    existing = informer.lister.get(ref.namespace, name)
    if existing is None:
        if owner_live is not None and not owner_live():
            raise OwnerGone(f"{ref.kind} {ref.key}")
        try:
            created = api.create(ref.namespace, desired)
        except AlreadyExists:
            existing = api.get(ref.namespace, name)
        else:
            seen.created.append(f"{kind} {name}")
            seen.wrote(created)
            logger.info("{} {}: created {} {}", ref.kind, ref.key, kind, name)
            return created, True
    if not _controlled_by(existing, ref.uid):
        raise WorkloadConflict(kind, ref.namespace, name, field)
    labels = desired["metadata"].get("labels") or {}
    if not _has_labels(existing, labels):
        relabelled = _relabel(api, ref, existing, labels)
        if _version(relabelled) != _version(existing):
            seen.wrote(relabelled)
        existing = relabelled
    return existing, False


def _has_labels(obj: Obj, labels: Mapping[str, str]) -> bool:
    have = (obj.get("metadata") or {}).get("labels") or {}
    return all(have.get(k) == v for k, v in labels.items())


def _relabel(api: ResourceClient, ref: JobRef, existing: Obj, labels: Mapping[str, str]) -> Obj:
    """Sedna's labels put back on an object the owner controls: without them the scoped
    cache never shows it (an object of an older GM, a label removed by hand)."""
    name = str(existing["metadata"]["name"])

    def mutate(fresh: dict[str, Any]) -> bool:
        if _has_labels(fresh, labels):
            return False
        if not _controlled_by(fresh, ref.uid):
            raise WorkloadConflict(api.res.kind, ref.namespace, name, "metadata.ownerReferences")
        fresh.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
        return True

    out = update_with_retry(api, ref.namespace, name, mutate, current=existing)
    logger.info(
        "{} {}: {} {} lacked its worker labels; they are put back", ref.kind, ref.key,
        api.res.kind, name,
    )  # fmt: skip
    return out


def roll_out(
    api: ResourceClient,
    ref: JobRef,
    existing: Obj,
    want_hash: str,
    apply: Callable[[dict[str, Any]], None],
    seen: Observed,
) -> Obj:
    """`existing` with `apply` written to it (conflicts retried), unless it already
    carries `want_hash`; a controller other than the owner raises `WorkloadConflict`."""
    if _annotated_hash(existing) == want_hash:
        return existing
    name = existing["metadata"]["name"]
    kind = str(existing.get("kind") or api.res.kind)

    def mutate(fresh: dict[str, Any]) -> bool:
        if _annotated_hash(fresh) == want_hash:
            return False
        if not _controlled_by(fresh, ref.uid):
            raise WorkloadConflict(kind, ref.namespace, name, "metadata.ownerReferences")
        apply(fresh)
        _set_hash(fresh, want_hash)
        return True

    out = update_with_retry(api, ref.namespace, name, mutate, current=existing)
    seen.updated.append(f"{kind} {name}")
    if _version(out) != _version(existing):
        seen.wrote(out)
    logger.info("{} {}: rolled the spec out to {} {}", ref.kind, ref.key, kind, name)
    return out


def ensure_service(
    api: ResourceClient,
    informer: SharedInformer,
    owner: Obj,
    want: ServiceWant,
    seen: Observed,
    owner_live: Callable[[], bool] | None = None,
) -> Obj:
    """The owner's Service for `want`: created, adopted (ours after a lost answer),
    healed and rolled out; its host and node port go into `seen`.

    The one way every owner makes its Services, with or without the rest of the family
    (`OwnedWorkloads` calls it, and so does a feature with its own controller). Raises
    `WorkloadConflict` for a Service of that name the owner does not control, and API
    errors.
    """
    ref = job_ref(owner)
    if want.flavor == "nodeport":
        desired = build_nodeport_service(ref, want.worker_type, want.port, want.external_ip)
    else:
        desired = build_edgemesh_service(ref, want.worker_type, want.port)
    want_hash = spec_hash(desired["spec"])
    _set_hash(desired, want_hash)
    field = f"service {service_name(ref, want.worker_type)}"
    existing, created = create_or_adopt(api, informer, ref, desired, field, seen, owner_live)
    if not created:

        def apply(fresh: dict[str, Any]) -> None:
            # our keys only: clusterIP and what else the server set are kept (the ports
            # are a list: copied whole, where a per-value json_deepcopy would raise)
            fresh.setdefault("spec", {}).update(json_deepcopy(desired["spec"]))

        existing = roll_out(api, ref, existing, want_hash, apply, seen)
    meta = existing.get("metadata") or {}
    seen.service_hosts[want.worker_type] = f"{meta.get('name')}.{meta.get('namespace')}"
    ports = (existing.get("spec") or {}).get("ports") or [{}]
    seen.node_ports[want.worker_type] = int(ports[0].get("nodePort") or 0)
    return existing


class _OwnedHandler:
    """Enqueues the owner of an owned object on any change (found by controller ref)."""

    def __init__(
        self,
        owners: SharedInformer,
        kind: str,
        group: str,
        enqueue: Callable[[str], None],
        echoes: WriteEchoes,
    ):
        self.owners = owners
        self.kind = kind
        self.group = group
        self.enqueue = enqueue
        self.echoes = echoes

    def _owner_key(self, obj: Obj) -> str | None:
        ref = controller_of(obj)
        if ref is None or ref.get("kind") != self.kind:
            return None
        if str(ref.get("apiVersion") or "").rpartition("/")[0] != self.group:
            return None
        ns = str((obj.get("metadata") or {}).get("namespace") or "")
        owner = self.owners.lister.get(ns, str(ref.get("name") or ""))
        if owner is None or (owner.get("metadata") or {}).get("uid") != ref.get("uid"):
            return None
        return meta_namespace_key(owner)

    def _enqueue_owner(self, obj: Obj) -> None:
        key = self._owner_key(obj)
        if key is not None:
            self.enqueue(key)

    def on_add(self, obj: Obj) -> None:
        if self.echoes.is_echo(obj):
            return  # made by the owner's sync, which saw it
        self._enqueue_owner(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        if (old.get("metadata") or {}).get("resourceVersion") == (new.get("metadata") or {}).get(
            "resourceVersion"
        ):
            return  # a resync: the owner's own resync covers it
        if self.echoes.is_echo(new) and controller_of(old) == controller_of(new):
            return  # written by the owner's sync, which saw it
        self._enqueue_owner(new)
        if controller_of(old) != controller_of(new):
            self._enqueue_owner(old)

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        gone = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if isinstance(gone, Mapping):
            self.echoes.forget(gone)
        self._enqueue_owner(gone)


class OwnedWorkloads:
    """The owned-workload machinery for one owner resource; one per feature controller.

    Built in the feature's constructor (it opens the shared informers of Deployments,
    Services, HPAs and, with ``pods=True``, Pods, and registers the owner mapping);
    `ensure` runs inside the controller's sync.
    """

    def __init__(
        self,
        ctx: ControllerContext,
        owner: Resource,
        enqueue: Callable[[str], None],
        *,
        pods: bool = False,
    ) -> None:
        self.ctx = ctx
        self.owner_resource = owner
        self.runtime = ctx.worker_runtime
        self.owners: SharedInformer = ctx.informers.informer(owner)
        # scoped by the owner kind's label: the cluster's other objects are not cached
        self.deployment_informer: SharedInformer = ctx.informers.owned_by_kind(DEPLOYMENTS, owner)
        self.service_informer: SharedInformer = ctx.informers.owned_by_kind(SERVICES, owner)
        self.hpa_informer: SharedInformer = ctx.informers.owned_by_kind(HPAS, owner)
        self.pod_informer: SharedInformer | None = (
            ctx.informers.worker_pods(owner) if pods else None
        )
        self.deployments_api: ResourceClient = ctx.kube.resource(DEPLOYMENTS)
        self.services_api: ResourceClient = ctx.kube.resource(SERVICES)
        self.hpas_api: ResourceClient = ctx.kube.resource(HPAS)
        self.owners_api: ResourceClient = ctx.kube.resource(owner)
        # the versions this owner kind's syncs wrote: their watch events wake no sync
        self.echoes = WriteEchoes()
        handler = _OwnedHandler(self.owners, owner.kind, owner.group, enqueue, self.echoes)
        for inf in (
            self.deployment_informer,
            self.service_informer,
            self.hpa_informer,
            self.pod_informer,
        ):
            if inf is not None:
                inf.add_event_handler(handler)

    # -- reading ---------------------------------------------------------------------

    def owned(self, informer: SharedInformer, owner: Obj) -> list[Obj]:
        """Objects of `informer` controlled by `owner` (by controller-reference UID)."""
        uid = str((owner.get("metadata") or {}).get("uid") or "")
        return informer.lister.by_owner_uid(uid) if uid else []

    def pods_of(self, owner: Obj) -> list[Obj]:
        """The owner's own pods (needs ``pods=True``)."""
        if self.pod_informer is None:
            raise RuntimeError("OwnedWorkloads was built without pods=True")
        return self.owned(self.pod_informer, owner)

    # -- ensuring --------------------------------------------------------------------

    def ensure(self, owner: Obj, plan: WorkloadPlan) -> Observed:
        """Create, update and prune so the owner controls exactly what `plan` names.

        Raises `WorkloadConflict`, the runtime's `WorkerError` (a template the runtime
        cannot use, a missing secret) and API errors (the sync is retried).
        """
        ref = job_ref(owner)
        seen = Observed(on_write=self.echoes.record)
        live = self._owner_check(owner)
        for s in plan.services:
            self._ensure_service(owner, s, seen, live)
        for d in plan.deployments:
            seen.deployments[deployment_name(ref, d.worker_type)] = self._ensure_deployment(
                owner, ref, d, seen, live
            )
        for h in plan.hpas:
            self._ensure_hpa(ref, h, seen, live)
        self._prune(owner, ref, plan, seen)
        if self.pod_informer is not None:
            seen.pods = self.pods_of(owner)
        return seen

    def _owner_check(self, owner: Obj) -> Callable[[], bool]:
        """Whether the owner is still there, read from the server once per pass and only
        before the pass's first create.

        The cache can hold an owner the server has already deleted: its dependents'
        deletions (the garbage collector's cascade) may arrive before its own. Sedna's
        Go GM then makes them again, with a reference to an owner that is gone; here a
        pass that would create reads the owner first and creates nothing for one that
        is gone or being deleted.

        An owner without a status has never had a pass finish for it, so no dependents
        of its can be deleted ahead of it: its passes create without the read (one
        request of the five a new joint inference service costs). If it was deleted
        meanwhile, what is created references a UID that is gone, and the garbage
        collector removes it.
        """
        if not owner.get("status"):
            return _always_live
        answer: list[bool] = []

        def live() -> bool:
            if not answer:
                meta = owner.get("metadata") or {}
                try:
                    fresh = self.owners_api.get(meta.get("namespace"), str(meta.get("name")))
                except NotFound:
                    answer.append(False)
                else:
                    now = fresh.get("metadata") or {}
                    answer.append(
                        now.get("uid") == meta.get("uid") and not now.get("deletionTimestamp")
                    )
            return answer[0]

        return live

    def _ensure_deployment(
        self,
        owner: Obj,
        ref: JobRef,
        want: DeploymentWant,
        seen: Observed,
        live: Callable[[], bool] | None = None,
    ) -> Obj | None:
        try:
            return self._put_deployment(owner, ref, want, seen, live)
        except Invalid as exc:  # a template or count the API server refuses: the spec's fault
            if want.field.endswith(".template"):
                # the Deployment's ``spec.<x>`` is the owner's ``<x>`` beside the template
                under, strip = want.field.removesuffix(".template"), "spec."
            else:
                under, strip = want.field, "spec.template."
            field_, message = refused_field(exc, under, want.field, strip)
            raise ref.error(field_, message) from None

    def _put_deployment(
        self,
        owner: Obj,
        ref: JobRef,
        want: DeploymentWant,
        seen: Observed,
        live: Callable[[], bool] | None,
    ) -> Obj | None:
        desired = self.runtime.build_deployment(owner, want.spec, want.param, field=want.field)
        want_hash = spec_hash(desired["spec"])
        _set_hash(desired, want_hash)
        existing, created = create_or_adopt(
            self.deployments_api, self.deployment_informer, ref, desired, want.field, seen, live
        )
        if created or (existing.get("metadata") or {}).get("deletionTimestamp"):
            return existing

        def apply(fresh: dict[str, Any]) -> None:
            spec = fresh.setdefault("spec", {})
            spec["template"] = json_deepcopy(desired["spec"]["template"])
            if "replicas" in desired["spec"]:
                spec["replicas"] = desired["spec"]["replicas"]
            fresh["metadata"].setdefault("labels", {}).update(desired["metadata"]["labels"])

        return roll_out(self.deployments_api, ref, existing, want_hash, apply, seen)

    def _ensure_service(
        self, owner: Obj, want: ServiceWant, seen: Observed, live: Callable[[], bool] | None = None
    ) -> None:
        ensure_service(self.services_api, self.service_informer, owner, want, seen, live)

    def _ensure_hpa(
        self, ref: JobRef, want: HPAWant, seen: Observed, live: Callable[[], bool] | None = None
    ) -> None:
        desired = build_hpa(ref, "Deployment", want.target, want.worker_type, want.hpa)
        want_hash = spec_hash(desired["spec"])
        _set_hash(desired, want_hash)
        existing, created = create_or_adopt(
            self.hpas_api,
            self.hpa_informer,
            ref,
            desired,
            f"hpa {desired['metadata']['name']}",
            seen,
            live,
        )
        if created:
            return

        def apply(fresh: dict[str, Any]) -> None:
            apply_hpa_spec(fresh, ref, "Deployment", want.target, want.worker_type, want.hpa)

        roll_out(self.hpas_api, ref, existing, want_hash, apply, seen)

    def _prune(self, owner: Obj, ref: JobRef, plan: WorkloadPlan, seen: Observed) -> None:
        keep: dict[str, set[str]] = {
            "deployments": {deployment_name(ref, d.worker_type) for d in plan.deployments},
            "services": {service_name(ref, s.worker_type) for s in plan.services},
            "hpas": {hpa_name(h.target) for h in plan.hpas},
        }
        for what, informer, api in (
            ("hpas", self.hpa_informer, self.hpas_api),
            ("deployments", self.deployment_informer, self.deployments_api),
            ("services", self.service_informer, self.services_api),
        ):
            for obj in self._stale(self.owned(informer, owner), keep[what]):
                name = obj["metadata"]["name"]
                with contextlib.suppress(NotFound):
                    api.delete(ref.namespace, name)
                    seen.deleted.append(f"{api.res.kind} {name}")
                    logger.info("{} {}: deleted {} {}", ref.kind, ref.key, api.res.kind, name)

    @staticmethod
    def _stale(objs: Iterable[Obj], keep: set[str]) -> list[Obj]:
        return [
            o
            for o in objs
            if (o.get("metadata") or {}).get("name") not in keep
            and not (o.get("metadata") or {}).get("deletionTimestamp")
        ]
