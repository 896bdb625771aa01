"""The GM's RBAC, generated from what the enabled features declare (`sedna-gm rbac`).

Each feature lists the API access its controllers need (`Feature.access`); the runtime
core adds its own: Events in the watched namespaces, the Node names for the message
layer (and one Node by name with `websocket.nodeAddressBinding`), the one token Secret
(by name), the leader Lease (in its namespace). With `namespace` set in gm.yaml the
namespaced grants are a Role there, not a ClusterRole, so a GM confined to one namespace
reads no Secret outside it. `config/rbac.yaml` and the Helm chart's RBAC are this
output; tests keep them equal and compare it with the calls the GM really makes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sedna.runtime.config import GMConfig
from sedna.runtime.plugin_api import ApiAccess, Feature

# Resources that have no namespace: granted cluster-wide whatever gm.yaml's namespace.
CLUSTER_SCOPED = frozenset(
    {
        ("", "nodes"),
        ("", "namespaces"),
        ("", "persistentvolumes"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
    }
)
VERB_ORDER = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")

# What the runtime core calls, whatever the features.
CORE_ACCESS: tuple[ApiAccess, ...] = (
    ApiAccess("", ["events"], ["create", "patch"]),
    # The message layer forgets a deleted Node's queue: a metadata-only informer.
    ApiAccess("", ["nodes"], ["list", "watch"]),
    # Startup: the kinds the features name must be served, and installed kinds that no
    # enabled feature reconciles are warned about.
    ApiAccess("apiextensions.k8s.io", ["customresourcedefinitions"], ["list"]),
)
LEASE_ACCESS = ApiAccess("coordination.k8s.io", ["leases"], ["get", "create", "update"])
# websocket.nodeAddressBinding: an LC's peer address is checked against its Node's
# status.addresses, read by name when it connects.
NODE_ADDRESS_ACCESS = ApiAccess("", ["nodes"], ["get"])


@dataclass(frozen=True)
class Grant:
    """Verbs on one resource, in one namespace (None: cluster-wide), maybe by name."""

    group: str
    resource: str
    verbs: frozenset[str]
    namespace: str | None = None
    names: tuple[str, ...] = ()

    def allows(self, group: str, resource: str, verb: str, namespace: str | None) -> bool:
        if (group, resource) != (self.group, self.resource) or verb not in self.verbs:
            return False
        return self.namespace is None or self.namespace == namespace


def ordered_verbs(verbs: Iterable[str]) -> list[str]:
    known = [v for v in VERB_ORDER if v in verbs]
    return known + sorted(set(verbs) - set(VERB_ORDER))


def grants(config: GMConfig, features: Sequence[Feature]) -> list[Grant]:
    """Every grant the GM needs with this config and these (enabled) features."""
    scope = config.namespace or None
    wanted: dict[tuple[str, str, str | None, tuple[str, ...]], set[str]] = {}

    def add(access: ApiAccess, namespace: str | None, names: tuple[str, ...] = ()) -> None:
        for resource in access.resources:
            base = resource.split("/", 1)[0]
            ns = None if (access.group, base) in CLUSTER_SCOPED else namespace
            wanted.setdefault((access.group, resource, ns, names), set()).update(access.verbs)

    for access in CORE_ACCESS:
        add(access, scope)
    for feature in features:
        for access in feature.access:
            add(access, scope)
    ws = config.websocket
    if ws.nodeAddressBinding:
        add(NODE_ADDRESS_ACCESS, scope)
    if ws.auth == "token" and ws.tokenSecret and not ws.tokenFile:
        secret_ns, _, secret_name = ws.tokenSecret.partition("/")
        add(ApiAccess("", ["secrets"], ["get"]), secret_ns, (secret_name,))
    m = config.metrics
    if m.enabled and m.auth == "token" and m.tokenSecret and not m.tokenFile:
        secret_ns, _, secret_name = m.tokenSecret.partition("/")
        add(ApiAccess("", ["secrets"], ["get"]), secret_ns, (secret_name,))
    if ws.auth == "node":
        # the node token Secrets, watched by label; RBAC cannot scope a list by label, so
        # keep nodeTokenNamespace for the GM's own Secrets
        add(ApiAccess("", ["secrets"], ["list", "watch"]), ws.nodeTokenNamespace)
    if config.leaderElection.enabled:
        add(LEASE_ACCESS, config.leaderElection.leaseNamespace)
    return [
        Grant(group, resource, frozenset(verbs), ns, names)
        for (group, resource, ns, names), verbs in sorted(
            wanted.items(), key=lambda kv: (kv[0][2] or "", kv[0][0], kv[0][1], kv[0][3])
        )
    ]


def _rules(items: Sequence[Grant]) -> list[dict[str, Any]]:
    """One rule per (group, verbs, names), resources merged, in a stable order."""
    merged: dict[tuple[str, tuple[str, ...], tuple[str, ...]], list[str]] = {}
    for g in items:
        merged.setdefault((g.group, tuple(ordered_verbs(g.verbs)), g.names), []).append(g.resource)
    rules = []
    for (group, verbs, names), resources in sorted(merged.items()):
        rule: dict[str, Any] = {"apiGroups": [group], "resources": sorted(resources)}
        if names:
            rule["resourceNames"] = list(names)
        rule["verbs"] = list(verbs)
        rules.append(rule)
    return rules


def _binding(kind: str, name: str, namespace: str | None, sa: str, sa_ns: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": f"{kind}Binding",
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": sa_ns}],
    }


def rbac_manifests(
    config: GMConfig,
    features: Sequence[Feature],
    *,
    namespace: str = "sedna",
    name: str = "sedna-gm",
) -> list[dict[str, Any]]:
    """Namespace, ServiceAccount, then the roles and bindings, in the order kubectl applies.

    The Namespace comes first: a ServiceAccount or Role in a namespace that does not
    exist yet is refused, so `kubectl apply -f rbac.yaml -f deploy.yaml` must find it.
    """
    out: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": namespace},
        },
    ]
    by_scope: dict[str | None, list[Grant]] = {}
    for g in grants(config, features):
        by_scope.setdefault(g.namespace, []).append(g)
    for scope in sorted(by_scope, key=lambda s: (s is not None, s or "")):
        items = by_scope[scope]
        if scope is None:
            kind, meta = "ClusterRole", {"name": name}
        else:
            kind, meta = "Role", {"name": name, "namespace": scope}
        out.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": kind,
                "metadata": meta,
                "rules": _rules(items),
            }
        )
        out.append(_binding(kind, name, scope, name, namespace))
    return out
