"""The registry of served resource types: built-in kinds and CRD-defined kinds.

Discovery, routing, the store and garbage collection all need the same facts about a
kind (plural, scope, whether it has a status subresource), so they live in one table.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import APIError

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


@dataclass(frozen=True)
class ResourceType:
    """One served resource (group/version/plural) and how it behaves."""

    group: str
    version: str
    plural: str
    kind: str
    singular: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    status_subresource: bool = False
    scale_subresource: bool = False
    custom: bool = False
    categories: tuple[str, ...] = ()
    list_kind: str = ""
    # objects of this kind are returned by DELETE (kube's ReturnDeletedObject)
    return_deleted: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def api_version(self) -> str:
        """``v1`` for the core group, ``group/version`` otherwise."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> tuple[str, str]:
        """Storage key: objects are stored once per group+plural, whatever the version."""
        return (self.group, self.plural)

    @property
    def qualified(self) -> str:
        """``plural.group`` as used in error messages and CRD names."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _builtin(
    group: str,
    version: str,
    plural: str,
    kind: str,
    *,
    namespaced: bool = True,
    short: tuple[str, ...] = (),
    status: bool = False,
    scale: bool = False,
    ret: bool = False,
    categories: tuple[str, ...] = (),
) -> ResourceType:
    return ResourceType(
        group=group,
        version=version,
        plural=plural,
        kind=kind,
        singular=kind.lower(),
        namespaced=namespaced,
        short_names=short,
        status_subresource=status,
        scale_subresource=scale,
        return_deleted=ret,
        categories=categories,
        list_kind=kind + "List",
    )


BUILTINS: tuple[ResourceType, ...] = (
    _builtin("", "v1", "pods", "Pod", short=("po",), status=True, ret=True, categories=("all",)),
    _builtin("", "v1", "secrets", "Secret"),
    _builtin("", "v1", "configmaps", "ConfigMap", short=("cm",)),
    _builtin(
        "", "v1", "services", "Service", short=("svc",), status=True, ret=True, categories=("all",)
    ),
    _builtin("", "v1", "events", "Event", short=("ev",)),
    _builtin("", "v1", "serviceaccounts", "ServiceAccount", short=("sa",)),
    _builtin("", "v1", "endpoints", "Endpoints", short=("ep",)),
    _builtin("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", short=("pvc",)),
    _builtin("", "v1", "nodes", "Node", namespaced=False, short=("no",), status=True, ret=True),
    _builtin("", "v1", "namespaces", "Namespace", namespaced=False, short=("ns",), status=True),
    _builtin("coordination.k8s.io", "v1", "leases", "Lease"),
    _builtin(
        "apps",
        "v1",
        "deployments",
        "Deployment",
        short=("deploy",),
        status=True,
        scale=True,
        categories=("all",),
    ),
    _builtin(
        "apps",
        "v1",
        "replicasets",
        "ReplicaSet",
        short=("rs",),
        status=True,
        scale=True,
        categories=("all",),
    ),
    _builtin(
        "apps", "v1", "daemonsets", "DaemonSet", short=("ds",), status=True, categories=("all",)
    ),
    _builtin(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        short=("hpa",),
        status=True,
    ),
    _builtin(
        "autoscaling",
        "v1",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        short=("hpa",),
        status=True,
    ),
    _builtin("events.k8s.io", "v1", "events", "Event", short=("ev",)),
    _builtin(
        "policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", short=("pdb",), status=True
    ),
    _builtin("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", short=("netpol",)),
    _builtin("rbac.authorization.k8s.io", "v1", "roles", "Role"),
    _builtin("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
    _builtin("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False),
    _builtin(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        namespaced=False,
    ),
    _builtin(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        namespaced=False,
        short=("crd", "crds"),
        status=True,
    ),
)

CRD_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")
NAMESPACE_KEY = ("", "namespaces")
POD_KEY = ("", "pods")

# The version a group is preferred at in discovery when it is served at several.
PREFERRED = {"autoscaling": "v2"}


def crd_types(crd: Mapping[str, Any]) -> list[ResourceType]:
    """The resource types a CRD manifest defines (one per served version).

    Raises a 422 ``Invalid`` naming the field when the manifest lacks what a server needs.
    """
    name = str(crd.get("metadata", {}).get("name", ""))
    spec = crd.get("spec")
    if not isinstance(spec, Mapping):
        raise APIError(
            422, "Invalid", f'CustomResourceDefinition "{name}" is invalid: spec: Required value'
        )
    names = spec.get("names") or {}
    group = spec.get("group")
    plural = names.get("plural")
    kind = names.get("kind")
    for fld, val in (
        ("spec.group", group),
        ("spec.names.plural", plural),
        ("spec.names.kind", kind),
    ):
        if not val or not isinstance(val, str):
            raise APIError(
                422,
                "Invalid",
                f'CustomResourceDefinition.apiextensions.k8s.io "{name}" is invalid: '
                f"{fld}: Required value",
                name=name,
                group="apiextensions.k8s.io",
                kind="CustomResourceDefinition",
            )
    assert isinstance(group, str) and isinstance(plural, str) and isinstance(kind, str)
    if name != f"{plural}.{group}":
        raise APIError(
            422,
            "Invalid",
            f'CustomResourceDefinition.apiextensions.k8s.io "{name}" is invalid: metadata.name: '
            f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group',
            name=name,
            group="apiextensions.k8s.io",
            kind="CustomResourceDefinition",
        )
    out = []
    versions = spec.get("versions") or []
    if not versions and spec.get("version"):
        versions = [{"name": spec["version"], "served": True, "storage": True}]
    for ver in versions:
        if not ver.get("served", True):
            continue
        sub = ver.get("subresources") or spec.get("subresources") or {}
        out.append(
            ResourceType(
                group=group,
                version=str(ver["name"]),
                plural=plural,
                kind=kind,
                singular=str(names.get("singular") or kind.lower()),
                namespaced=spec.get("scope", "Namespaced") != "Cluster",
                short_names=tuple(names.get("shortNames") or ()),
                status_subresource="status" in sub,
                scale_subresource="scale" in sub,
                custom=True,
                categories=tuple(names.get("categories") or ()),
                list_kind=str(names.get("listKind") or kind + "List"),
                extra={"schema": (ver.get("schema") or {}).get("openAPIV3Schema")},
            )
        )
    return out


class Registry:
    """Thread-safe table of resource types, keyed by (group, version, plural)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        self._crd_owned: dict[str, list[ResourceType]] = {}
        for rt in BUILTINS:
            self._types[(rt.group, rt.version, rt.plural)] = rt

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The type served at that path, or None."""
        return self._types.get((group, version, plural))

    def all(self) -> list[ResourceType]:
        """A snapshot of every served type."""
        with self._lock:
            return list(self._types.values())

    def by_key(self, key: tuple[str, str]) -> ResourceType | None:
        """Any served version of a stored resource (for GC and namespace cleanup)."""
        for rt in self.all():
            if rt.key == key:
                return rt
        return None

    def add_crd(self, crd: Mapping[str, Any]) -> list[ResourceType]:
        """Serve the kinds of a CRD (replacing what an older version of it served)."""
        types = crd_types(crd)
        name = str(crd["metadata"]["name"])
        with self._lock:
            for old in self._crd_owned.pop(name, []):
                self._types.pop((old.group, old.version, old.plural), None)
            for rt in types:
                self._types[(rt.group, rt.version, rt.plural)] = rt
            self._crd_owned[name] = types
        return types

    def remove_crd(self, name: str) -> list[ResourceType]:
        """Stop serving the kinds of a deleted CRD."""
        with self._lock:
            old = self._crd_owned.pop(name, [])
            for rt in old:
                self._types.pop((rt.group, rt.version, rt.plural), None)
        return old

    def groups(self) -> dict[str, list[str]]:
        """group -> served versions (preferred first), for /apis."""
        out: dict[str, list[str]] = {}
        for rt in self.all():
            if rt.group and rt.version not in out.setdefault(rt.group, []):
                out[rt.group].append(rt.version)
        for g, vers in out.items():
            pref = PREFERRED.get(g)
            vers.sort(key=lambda v: (v != pref, _version_rank(v)))
        return out

    def in_group_version(self, group: str, version: str) -> Iterable[ResourceType]:
        """Types served under one group/version, for discovery."""
        return [rt for rt in self.all() if rt.group == group and rt.version == version]


def _version_rank(v: str) -> tuple[int, int, int]:
    """Kube's version priority: GA > beta > alpha, higher numbers first."""
    import re

    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", v)
    if not m:
        return (3, 0, 0)
    major = int(m.group(1))
    stage = {"": 0, "beta": 1, "alpha": 2}[m.group(2) or ""]
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor)
