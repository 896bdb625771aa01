"""What each verb means: defaulting, validation, optimistic concurrency, the status
subresource, generation, finalizers, graceful deletion and namespace lifecycle.

Handlers translate HTTP to calls here; the store only stores. Garbage collection
(``gc``) hooks in after every removal.
"""

from __future__ import annotations

import contextlib
import copy
import random
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from . import errors, pagination
from .bodies import Encoded, encode_object
from .errors import APIError
from .object_validation import validate_object
from .pagination import LATEST, Continue
from .resources import CRD_KEY, NAMESPACE_KEY, Registry, ResourceType, crd_types
from .schema_validation import validate_custom_resource
from .selectors import Matcher
from .store import Store

if TYPE_CHECKING:
    from .gc import GarbageCollector

# kube's rand.String alphabet: no vowels (no words), no confusable 0/1/3
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_NAME_RE_LOOSE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.:]*[A-Za-z0-9])?$")
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
FOREGROUND = "foregroundDeletion"
# removals whose cascades wait for the store to take writes again; beyond, the oldest go
MAX_UNFINISHED = 10_000
ORPHAN = "orphan"


def now() -> str:
    """RFC 3339 UTC with second precision, as kube's metav1.Time marshals."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# kube's names.MaxGeneratedNameLength: room for the suffix within a 63-character label
RANDOM_LENGTH = 5
MAX_GENERATED_NAME_LENGTH = 63 - RANDOM_LENGTH


def random_suffix(n: int = RANDOM_LENGTH) -> str:
    """The generateName suffix (kube's utilrand.String)."""
    return "".join(random.choice(NAME_ALPHABET) for _ in range(n))


def generate_name(base: str) -> str:
    """A name from `generateName` as kube's SimpleNameGenerator makes it.

    The base is cut to 58 characters first, so a long prefix (a controller's
    `<job>-<type>-` for a job with a long name) still yields a valid name instead of
    a 422 on every retry.
    """
    return base[:MAX_GENERATED_NAME_LENGTH] + random_suffix()


def with_own_metadata(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A stored object to change the metadata of, at the cost of the metadata's keys.

    Stored objects are never changed in place, so all but the metadata is shared with
    the stored one; the caller sets or replaces metadata's values (finalizers,
    ownerReferences, deletionTimestamp), never changes them in place. A deep copy of a
    3 MB object cost a DELETE or the GC over 100 ms on the loop.
    """
    new = dict(obj)
    new["metadata"] = dict(obj["metadata"])
    return new


def _terminating(ns_obj: dict[str, Any]) -> dict[str, Any]:
    """A namespace as its deletion marks it (kept as it is when already terminating)."""
    if ns_obj["metadata"].get("deletionTimestamp"):
        return ns_obj
    new = with_own_metadata(ns_obj)
    new["metadata"]["deletionTimestamp"] = now()
    new["metadata"]["deletionGracePeriodSeconds"] = 0
    new["status"] = {"phase": "Terminating"}
    return new


def _spec_part(obj: Mapping[str, Any], status_sub: bool) -> dict[str, Any]:
    skip = (
        ("metadata", "status", "kind", "apiVersion")
        if status_sub
        else ("metadata", "kind", "apiVersion")
    )
    return {k: v for k, v in obj.items() if k not in skip}


class Stale(Exception):
    """The store changed what a draft was worked out against: work it out again."""


@dataclass
class Draft:
    """A create or update worked out against the store as it was, ready to commit.

    Working a write out (checks, defaults, the CRD's schema, the encoding) costs the
    object's size and changes nothing shared, so a large one runs off the server's
    loop (``writes``); `Operations.commit` then checks on the loop, in O(1), that what
    it assumed still holds, and stores it.
    """

    rt: ResourceType
    # what to store, or for a no-op the stored object itself
    obj: dict[str, Any]
    # the stored object it replaces; None for a create
    old: dict[str, Any] | None
    subresource: str | None = None
    # ``obj``'s JSON but for its resourceVersion; None: encoded when stored (CRDs)
    encoded: Encoded | None = None
    # an update that changes nothing: nothing is stored (nor a resourceVersion spent)
    noop: bool = False
    # a create whose name was generated: drawn again if taken before the commit
    generated: bool = False


class Operations:
    """The verbs of the API over one store."""

    def __init__(self, store: Store, registry: Registry, *, schema_validation: bool = True) -> None:
        self.store = store
        self.registry = registry
        self.schema_validation = schema_validation
        self.gc: GarbageCollector | None = None
        # removals whose cascades a refused write stopped, oldest first (by uid)
        self.unfinished: dict[str, tuple[ResourceType, dict[str, Any], dict[str, Any]]] = {}

    # ---- helpers -------------------------------------------------------------------
    def bootstrap(self) -> None:
        """Create the namespaces every cluster has (idempotent, so restarts keep them)."""
        rt = self.registry.get("", "v1", "namespaces")
        assert rt is not None
        for ns in SYSTEM_NAMESPACES:
            if self.store.get(NAMESPACE_KEY, "", ns) is None:
                self.create(rt, None, {"metadata": {"name": ns}})

    def _require_namespace(
        self, rt: ResourceType, ns: str | None, name: str, creating: bool
    ) -> str:
        if not rt.namespaced:
            return ""
        if not ns:
            raise errors.bad_request(
                "the server could not find the requested resource: namespace required"
            )
        nso = self.store.get(NAMESPACE_KEY, "", ns)
        if nso is None:
            raise errors.not_found("namespaces", ns)
        if creating and nso["metadata"].get("deletionTimestamp"):
            raise APIError(
                403,
                "Forbidden",
                f'{rt.qualified} "{name}" is forbidden: unable to create new content in '
                f"namespace {ns} because it is being terminated",
                name=name,
                group=rt.group,
                kind=rt.plural,
            )
        return ns

    def view(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """The object as served at ``rt``'s version (versions share storage, no conversion)."""
        if obj.get("apiVersion") != rt.api_version:
            obj = dict(obj, apiVersion=rt.api_version)
        return obj

    # ---- read ----------------------------------------------------------------------
    def get(self, rt: ResourceType, ns: str | None, name: str) -> dict[str, Any]:
        """GET one object (404 when absent)."""
        obj = self.store.get(rt.key, ns or "" if rt.namespaced else "", name)
        if obj is None:
            raise errors.not_found(rt.plural, name, rt.group)
        return self.view(rt, obj)

    def list(
        self,
        rt: ResourceType,
        ns: str | None,
        matcher: Matcher | None,
        *,
        limit: int = 0,
        cont: Continue | None = None,
    ) -> dict[str, Any]:
        """LIST, stamped with the resourceVersion of the snapshot it shows.

        Without ``limit`` or ``cont`` that is the current version; a paginated list
        serves every page from its first page's snapshot (see ``pagination``).
        """
        scope = ns if rt.namespaced else None
        meta: dict[str, Any]
        if limit <= 0 and cont is None:
            items = self.store.list(rt.key, scope)
            if matcher is not None:
                items = [o for o in items if matcher(o)]
            meta = {"resourceVersion": str(self.store.rv)}
        else:
            rv = self.store.rv if cont is None or cont.rv < 0 else cont.rv
            start = cont.start if cont is not None else ""
            objects = self.store.snapshot(rt.key, rv)
            if objects is None:
                raise errors.continue_expired(pagination.encode_continue(start, LATEST))
            pg = pagination.page(objects, scope, matcher, limit, start)
            items = pg.items
            meta = {"resourceVersion": str(rv)}
            if pg.next_start is not None:
                meta["continue"] = pagination.encode_continue(pg.next_start, rv)
                if pg.remaining is not None:
                    meta["remainingItemCount"] = pg.remaining
        if items and items[0].get("apiVersion") != rt.api_version:
            items = [self.view(rt, o) for o in items]
        return {
            "kind": rt.list_kind,
            "apiVersion": rt.api_version,
            "metadata": meta,
            "items": items,
        }

    # ---- create --------------------------------------------------------------------
    def create(
        self,
        rt: ResourceType,
        ns: str | None,
        body: Any,
        field_validation: str | None = None,
        *,
        dry_run: bool = False,
        owned: bool = False,
    ) -> dict[str, Any]:
        """POST: defaulting, generateName, uniqueness, schema, then store.

        A dry run does all of it but the store and answers what would be stored, as
        kube does: no resourceVersion (none was assigned), the generated name filled in.
        ``owned``: the body is the caller's to give away (a decoded request), not copied.
        """
        draft = self.draft_create(rt, ns, body, field_validation, owned=owned)
        return self._commit_now(draft, dry_run)

    def draft_create(
        self,
        rt: ResourceType,
        ns: str | None,
        body: Any,
        field_validation: str | None = None,
        *,
        owned: bool = False,
    ) -> Draft:
        """Everything a create decides before it is stored (may run off the loop).

        Of the store it reads only the namespace and whether the name is taken, which
        `commit` checks again.
        """
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request was in an unknown format")
        obj = body if owned else copy.deepcopy(body)
        self._check_kind(rt, obj)
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        self._check_shape(rt, obj)
        if rt.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and ns and body_ns != ns:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request"
                )
            ns = ns or body_ns
        name = meta.get("name") or ""
        if not name and meta.get("generateName"):
            name = ""
        elif not name:
            raise errors.invalid(
                rt.kind,
                "",
                "metadata.name",
                "Required value: name or generateName is required",
                rt.group,
            )
        if name:
            self._validate_name(rt, name)
        nsv = self._require_namespace(rt, ns, name or meta.get("generateName", ""), True)
        generated = not name
        if not name:
            name = self._generated_name(rt, nsv, meta)
        elif self.store.get(rt.key, nsv, name) is not None:
            raise errors.already_exists(rt.plural, name, rt.group)
        meta["name"] = name
        if rt.namespaced:
            meta["namespace"] = nsv
        else:
            meta.pop("namespace", None)
        obj["kind"] = rt.kind
        obj["apiVersion"] = rt.api_version
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now()
        meta["generation"] = 1
        for k in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            meta.pop(k, None)
        self._default(rt, obj)
        if rt.status_subresource and rt.custom:
            obj.pop("status", None)
        self._check_schema(rt, obj, field_validation)
        # a CRD's status is set (and its kinds served) when it is committed
        encoded = None if rt.key == CRD_KEY else Encoded(obj)
        return Draft(rt, obj, None, encoded=encoded, generated=generated)

    def _generated_name(self, rt: ResourceType, ns: str, meta: Mapping[str, Any]) -> str:
        self._validate_name(rt, str(meta["generateName"]), "metadata.generateName")
        name = ""
        for _ in range(20):
            cand = generate_name(str(meta["generateName"]))
            if self.store.get(rt.key, ns, cand) is None:
                name = cand
                break
        self._validate_name(rt, name)
        return name

    def _commit_create(self, draft: Draft, dry_run: bool) -> dict[str, Any]:
        rt, obj = draft.rt, draft.obj
        meta = obj["metadata"]
        name = meta["name"]
        nsv = self._require_namespace(rt, meta.get("namespace"), name, True)
        if self.store.get(rt.key, nsv, name) is not None:
            if draft.generated:
                raise Stale(name)
            raise errors.already_exists(rt.plural, name, rt.group)
        if rt.key == CRD_KEY:
            self._crd_accept(obj, dry_run)
        if dry_run:
            if draft.encoded is None:
                encode_object(obj)  # what a real write would refuse, a dry run refuses too
            return self.view(rt, obj)
        if rt.key == CRD_KEY:
            try:
                stored = self.store.put(rt.key, obj, None)
            except APIError:  # not stored: its kinds are not served either
                self.registry.remove_crd(name)
                raise
            return self.view(rt, stored)
        return self.view(rt, self.store.put(rt.key, obj, None, draft.encoded))

    def _check_schema(
        self, rt: ResourceType, obj: dict[str, Any], field_validation: str | None
    ) -> None:
        if rt.custom and self.schema_validation:
            validate_custom_resource(
                rt.extra.get("schema"),
                obj,
                kind=rt.kind,
                group=rt.group,
                version=rt.version,
                field_validation=field_validation,
            )

    def _check_shape(self, rt: ResourceType, obj: Mapping[str, Any]) -> None:
        """Metadata and the core kinds' fields of the right types (`object_validation`)."""
        validate_object(obj, kind=rt.kind, group=rt.group, key=rt.key, custom=rt.custom)

    def _check_kind(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        kind = obj.get("kind")
        if kind and kind != rt.kind:
            raise errors.bad_request(
                f"the kind of the provided object ({kind}) does not match the resource ({rt.kind})"
            )

    def _validate_name(self, rt: ResourceType, name: str, field: str = "metadata.name") -> None:
        rx = _NAME_RE_LOOSE if rt.plural in ("events",) else _NAME_RE
        checked = name
        if field.endswith("generateName") and len(name) > 1 and name.endswith("-"):
            # kube's maskTrailingDash, verbatim: its last two characters become one "a"
            checked = name[:-2] + "a"
        if len(checked) > 253 or not rx.match(checked):
            raise errors.invalid(
                rt.kind,
                name,
                field,
                f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of lower '
                "case alphanumeric characters, '-' or '.', and must start and end with an "
                "alphanumeric character",
                rt.group,
            )

    def _default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """The few defaults clients rely on (kube's defaulting is much larger)."""
        if rt.custom:
            return
        if rt.plural == "pods":
            spec = obj.setdefault("spec", {})
            spec.setdefault("restartPolicy", "Always")
            spec.setdefault("schedulerName", "default-scheduler")
            spec.setdefault("terminationGracePeriodSeconds", 30)
            spec.setdefault("dnsPolicy", "ClusterFirst")
            status = obj.setdefault("status", {})
            status.setdefault("phase", "Pending")
        elif rt.plural == "namespaces":
            name = obj["metadata"]["name"]
            obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = name
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
            obj["status"] = {"phase": "Active"}
        elif rt.plural in ("deployments", "replicasets"):
            obj.setdefault("spec", {}).setdefault("replicas", 1)

    def _crd_accept(self, obj: dict[str, Any], dry_run: bool = False) -> None:
        # both raise Invalid before anything is stored; only a real write serves the kinds
        if dry_run:
            crd_types(obj)
        else:
            self.registry.add_crd(obj)
        t = now()
        obj["status"] = {
            "acceptedNames": copy.deepcopy(obj["spec"].get("names", {})),
            "conditions": [
                {
                    "type": "NamesAccepted",
                    "status": "True",
                    "reason": "NoConflicts",
                    "message": "no conflicts found",
                    "lastTransitionTime": t,
                },
                {
                    "type": "Established",
                    "status": "True",
                    "reason": "InitialNamesAccepted",
                    "message": "the initial names have been accepted",
                    "lastTransitionTime": t,
                },
            ],
            "storedVersions": [
                v["name"] for v in obj["spec"].get("versions", []) if v.get("storage")
            ],
        }

    # ---- update --------------------------------------------------------------------
    def update(
        self,
        rt: ResourceType,
        ns: str | None,
        name: str,
        body: Any,
        subresource: str | None,
        field_validation: str | None = None,
        *,
        dry_run: bool = False,
        owned: bool = False,
    ) -> dict[str, Any]:
        """PUT on the object or its /status (``owned``: as for `create`)."""
        self.check_put(rt, ns, name, body)
        old = self.current(rt, ns, name)
        new = body if owned else copy.deepcopy(body)
        draft = self.draft_update(rt, old, new, subresource, field_validation=field_validation)
        return self._commit_now(draft, dry_run)

    def check_put(self, rt: ResourceType, ns: str | None, name: str, body: Any) -> None:
        """What a PUT's body must be before the stored object is looked at (400s)."""
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request was in an unknown format")
        self._check_kind(rt, body)
        meta = body.get("metadata")
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL "
                f"({name})"
            )
        if rt.namespaced and meta.get("namespace") and meta["namespace"] != ns:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on "
                "the request"
            )

    def current(self, rt: ResourceType, ns: str | None, name: str) -> dict[str, Any]:
        """The stored object (404 when absent)."""
        obj = self.store.get(rt.key, (ns or "") if rt.namespaced else "", name)
        if obj is None:
            raise errors.not_found(rt.plural, name, rt.group)
        return obj

    def commit_update(
        self,
        rt: ResourceType,
        old: dict[str, Any],
        new: dict[str, Any],
        subresource: str | None,
        *,
        internal: bool = False,
        field_validation: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Turn a client's full new object into the stored one and store it.

        ``new`` is owned by this call (a copy). ``internal`` writes (GC, namespace
        controller) skip the resourceVersion precondition. A ``dry_run`` answers the
        object as it would be stored, still at the current resourceVersion (kube's).
        """
        draft = self.draft_update(
            rt, old, new, subresource, internal=internal, field_validation=field_validation
        )
        return self._commit_now(draft, dry_run)

    def draft_update(
        self,
        rt: ResourceType,
        old: dict[str, Any],
        new: dict[str, Any],
        subresource: str | None,
        *,
        internal: bool = False,
        field_validation: str | None = None,
    ) -> Draft:
        """Everything an update decides before it is stored (may run off the loop).

        ``new`` (owned, changed in place) is the client's full object, ``old`` the
        stored one it replaces, which `commit` checks is still the stored one.
        """
        ometa = old["metadata"]
        nmeta = new.get("metadata")
        if not internal:
            self._check_shape(rt, new)  # a patch may have made anything of the object
        if not isinstance(nmeta, dict):
            nmeta = new["metadata"] = {}
        rv = nmeta.get("resourceVersion")
        if rv and not internal and str(rv) != ometa["resourceVersion"]:
            raise errors.conflict(rt.plural, ometa["name"], rt.group)
        if subresource == "status":
            result = dict(old)
            if "status" in new:
                result["status"] = new["status"]
            else:
                result.pop("status", None)
            result["metadata"] = dict(ometa)
            new = result
        else:
            if rt.status_subresource:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            for k in (
                "uid",
                "creationTimestamp",
                "name",
                "namespace",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
            ):
                if k in ometa:
                    nmeta[k] = ometa[k]
                else:
                    nmeta.pop(k, None)
            if (
                ometa.get("deletionTimestamp")
                and FOREGROUND in (ometa.get("finalizers") or ())
                and not internal
            ):
                # the GC owns this finalizer; a client update may not drop it
                fins = list(nmeta.get("finalizers") or ())
                if FOREGROUND not in fins:
                    fins.append(FOREGROUND)
                    nmeta["finalizers"] = fins
            new["kind"] = rt.kind
            new["apiVersion"] = old.get("apiVersion", rt.api_version)
            if _spec_part(new, rt.status_subresource) != _spec_part(old, rt.status_subresource):
                nmeta["generation"] = int(ometa.get("generation", 1)) + 1
        new["metadata"]["resourceVersion"] = ometa["resourceVersion"]
        if not internal:
            if subresource == "status":
                self._check_shape(rt, new)  # the stored object with the new status
            self._check_schema(rt, new, field_validation)
        if new == old:
            return Draft(rt, old, old, subresource, noop=True)
        # a CRD's kinds change when it is committed: encoded then, with the registry's
        encoded = None if rt.key == CRD_KEY else Encoded(new)
        return Draft(rt, new, old, subresource, encoded=encoded)

    def _commit_update(self, draft: Draft, dry_run: bool) -> dict[str, Any]:
        rt, new, old = draft.rt, draft.obj, draft.old
        assert old is not None
        ometa = old["metadata"]
        if self.store.get(rt.key, ometa.get("namespace", ""), ometa["name"]) is not old:
            raise Stale(ometa["name"])
        if draft.noop:
            return self.view(rt, old)  # no-op writes do not bump resourceVersion
        subresource = draft.subresource
        if dry_run:
            if rt.key == CRD_KEY and subresource != "status":
                crd_types(new)
            if draft.encoded is None:
                encode_object(new)
            return self.view(rt, new)
        crd_spec = rt.key == CRD_KEY and subresource != "status"
        if crd_spec:
            self.registry.add_crd(new)
        try:
            stored = self.store.put(rt.key, new, old, draft.encoded)
        except APIError:
            if crd_spec:  # not stored: serve what the stored CRD says
                self.registry.add_crd(old)
            raise
        if stored["metadata"].get("deletionTimestamp") and not stored["metadata"].get("finalizers"):
            return self.view(rt, self.finalize(rt, stored))
        return self.view(rt, stored)

    # ---- commit --------------------------------------------------------------------
    def commit(self, draft: Draft, *, dry_run: bool = False) -> dict[str, Any]:
        """Store a draft (on the loop) and answer the object as served.

        What the draft assumed is checked first, in O(1): that the object it replaces
        is still the stored one, for a create that the namespace takes new content and
        the name is free. ``Stale`` when it is not (the object changed meanwhile, a
        generated name was taken): the caller works the write out again. A dry run
        stores nothing, a no-op neither.
        """
        if draft.old is None:
            return self._commit_create(draft, dry_run)
        return self._commit_update(draft, dry_run)

    def _commit_now(self, draft: Draft, dry_run: bool) -> dict[str, Any]:
        """`commit` of a draft worked out on the loop just now: it cannot be stale
        unless the caller handed an ``old`` that is not the stored object (409)."""
        try:
            return self.commit(draft, dry_run=dry_run)
        except Stale as stale:
            raise errors.conflict(draft.rt.plural, str(stale), draft.rt.group) from None

    # ---- delete --------------------------------------------------------------------
    def delete(
        self,
        rt: ResourceType,
        ns: str | None,
        name: str,
        options: Mapping[str, Any] | None = None,
        *,
        dry_run: bool = False,
    ) -> tuple[int, dict[str, Any]]:
        """DELETE: returns (HTTP code, body) where body is the object or a Success Status.

        A dry run checks what a delete checks and answers what it would (the object
        marked for deletion while finalizers hold it, else the removed object or a
        Status), but changes nothing: no finalizer, no cascade, no orphaning.
        """
        options = options or {}
        old = self.current(rt, ns, name)
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != old["metadata"].get("uid"):
            raise errors.conflict(rt.plural, name, rt.group)
        if (
            pre.get("resourceVersion")
            and pre["resourceVersion"] != old["metadata"]["resourceVersion"]
        ):
            raise errors.conflict(rt.plural, name, rt.group)
        policy = options.get("propagationPolicy")
        if policy is None and options.get("orphanDependents") is not None:
            policy = "Orphan" if options["orphanDependents"] else "Background"
        if policy not in (None, "Foreground", "Background", "Orphan"):
            raise errors.invalid(
                "DeleteOptions",
                "",
                "propagationPolicy",
                f'Unsupported value: "{policy}": supported values: "Foreground", '
                '"Background", "Orphan"',
            )
        assert self.gc is not None
        if rt.key == NAMESPACE_KEY:
            if dry_run:
                return 200, self.view(rt, _terminating(old))
            return 200, self.view(rt, self._delete_namespace(old))
        meta = old["metadata"]
        fins = list(meta.get("finalizers") or ())
        if dry_run:
            return self._dry_delete(rt, old, fins, policy)
        if policy == "Orphan":
            self.gc.orphan_dependents(meta.get("uid", ""))
            old = self.current(rt, ns, name)
        elif (
            policy == "Foreground"
            and self.gc.has_dependents(meta.get("uid", ""))
            and FOREGROUND not in fins
        ):
            fins.append(FOREGROUND)
        if fins:
            if meta.get("deletionTimestamp") and fins == list(meta.get("finalizers") or ()):
                return 202, self.view(rt, old)
            new = with_own_metadata(old)
            new["metadata"]["finalizers"] = fins
            new["metadata"].setdefault("deletionTimestamp", now())
            new["metadata"].setdefault("deletionGracePeriodSeconds", 0)
            stored = self.store.put(rt.key, new, old)
            if FOREGROUND in fins:
                self.gc.delete_dependents_foreground(stored)
                cur = self.store.get(rt.key, meta.get("namespace", ""), name)
                if cur is None:
                    return 200, self._deleted_body(rt, stored)
                stored = cur
            return 202, self.view(rt, stored)
        final = self.finalize(rt, old)
        return 200, self._deleted_body(rt, final)

    def _dry_delete(
        self, rt: ResourceType, old: dict[str, Any], held: Sequence[str], policy: str | None
    ) -> tuple[int, dict[str, Any]]:
        """What `delete` would answer, computed from the stored object alone."""
        meta = old["metadata"]
        fins = [*held]
        assert self.gc is not None
        foreground = policy == "Foreground" and self.gc.has_dependents(meta.get("uid", ""))
        if foreground and FOREGROUND not in fins:
            fins.append(FOREGROUND)
        if not fins:
            return 200, self._deleted_body(rt, old)
        if meta.get("deletionTimestamp") and fins == list(meta.get("finalizers") or ()):
            return 202, self.view(rt, old)
        new = with_own_metadata(old)
        new["metadata"]["finalizers"] = fins
        new["metadata"].setdefault("deletionTimestamp", now())
        new["metadata"].setdefault("deletionGracePeriodSeconds", 0)
        return 202, self.view(rt, new)

    def _deleted_body(self, rt: ResourceType, final: dict[str, Any]) -> dict[str, Any]:
        if rt.return_deleted:
            return self.view(rt, final)
        details: dict[str, Any] = {
            "name": final["metadata"]["name"],
            "kind": rt.plural,
            "uid": final["metadata"].get("uid", ""),
        }
        if rt.group:
            details["group"] = rt.group
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": details,
        }

    def finalize(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """Really remove an object, then let GC and the namespace controller react."""
        final = self.store.remove(rt.key, obj)
        self._after_removal(rt, obj, final)
        return final

    def _after_removal(self, rt: ResourceType, obj: dict[str, Any], final: dict[str, Any]) -> None:
        """The cascades of a removal: dependents, a CRD's objects, the namespace.

        The removal itself is durable and is answered as done. A cascade write the
        store refuses (a full disk) is kept for `retry_unfinished` (housekeeping), as
        kube's garbage collector retries, instead of turning that answer into a 500.
        """
        try:
            if rt.key == CRD_KEY:
                self._drop_crd(obj)
            assert self.gc is not None
            self.gc.on_removed(final)
            ns = obj["metadata"].get("namespace")
            if ns:
                self.check_namespace_done(ns)
        except APIError as err:
            if err.code != 500:
                raise
            uid = str(final["metadata"].get("uid") or id(final))
            self.unfinished.pop(uid, None)
            self.unfinished[uid] = (rt, obj, final)
            while len(self.unfinished) > MAX_UNFINISHED:
                self.unfinished.pop(next(iter(self.unfinished)))

    def retry_unfinished(self) -> int:
        """Run again the cascades a refused write stopped; returns how many are still due."""
        pending, self.unfinished = self.unfinished, {}
        for rt, obj, final in pending.values():
            with contextlib.suppress(APIError):  # anything but a refused write: moot now
                self._after_removal(rt, obj, final)
        return len(self.unfinished)

    def _drop_crd(self, crd: dict[str, Any]) -> None:
        spec = crd.get("spec", {})
        key = (spec.get("group", ""), spec.get("names", {}).get("plural", ""))
        types = self.registry.remove_crd(crd["metadata"]["name"])
        if types:
            for obj in self.store.list(key):
                self.store.remove(key, obj)

    # ---- namespaces ----------------------------------------------------------------
    def _delete_namespace(self, ns_obj: dict[str, Any]) -> dict[str, Any]:
        rt = self.registry.get("", "v1", "namespaces")
        assert rt is not None
        name = ns_obj["metadata"]["name"]
        if not ns_obj["metadata"].get("deletionTimestamp"):
            new = with_own_metadata(ns_obj)
            new["metadata"]["deletionTimestamp"] = now()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            new["status"] = {"phase": "Terminating"}
            ns_obj = self.store.put(rt.key, new, ns_obj)
            self._empty_namespace(name)
        result = ns_obj
        self.check_namespace_done(name)
        return result

    def _empty_namespace(self, ns: str) -> None:
        for key in self.store.resource_keys():
            if key == NAMESPACE_KEY:
                continue
            rt = self.registry.by_key(key)
            if rt is None or not rt.namespaced:
                continue
            for obj in self.store.list(key, ns):
                cur = self.store.get(key, ns, obj["metadata"]["name"])
                if cur is None or cur["metadata"].get("deletionTimestamp"):
                    continue
                with contextlib.suppress(APIError):
                    self.delete(
                        rt, ns, obj["metadata"]["name"], {"propagationPolicy": "Background"}
                    )

    def check_namespace_done(self, ns: str) -> None:
        """Remove a terminating namespace once nothing is left in it."""
        nso = self.store.get(NAMESPACE_KEY, "", ns)
        if nso is None or not nso["metadata"].get("deletionTimestamp"):
            return
        for key in self.store.resource_keys():
            if key != NAMESPACE_KEY and self.store.list(key, ns):
                return
        if nso["metadata"].get("finalizers"):
            return
        rt = self.registry.get("", "v1", "namespaces")
        assert rt is not None
        final = self.store.remove(NAMESPACE_KEY, nso)
        assert self.gc is not None
        self.gc.on_removed(final)
