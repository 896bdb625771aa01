"""The GM's calls against its RBAC: what the in-process server recorded, checked rule by
rule against `config/rbac.yaml`.

A verb the GM sends but the RBAC does not grant is a 403 on a real cluster (and only
there: the in-process server authorizes nothing), so the test session records every
distinct call the GM makes (`APIServer.requests`, keyed by the GM's User-Agent) and
fails if one is not granted. Reusable: `RbacRules.load(path).denied(calls)` works for
any recorded set and any RBAC manifest (e.g. one generated from the features).

Matching follows Kubernetes' RBAC: a rule grants a call when its apiGroups, resources
(`*`, `*/status`, `pods/status`) and verbs (`*`) cover it. Roles grant namespaced calls;
a Role is bound to the GM's own namespace in the manifests, and the tests run each GM
in a namespace of its own, so a Role rule counts for any namespace here. ClusterRoles
grant everything, cluster-wide and all-namespace calls included.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sedna.embedded.apiserver import ApiCall, APIServer, RequestRecorder
from sedna.runtime import Feature
from sedna.runtime.kube import GM_USER_AGENT

PROJECT_ROOT = Path(__file__).resolve().parents[2]
RBAC_PATH = PROJECT_ROOT / "config" / "rbac.yaml"

__all__ = [
    "CORE_RESOURCES",
    "RBAC_PATH",
    "RbacRule",
    "RbacRules",
    "access_rules",
    "denied_gm_calls",
    "describe",
    "feature_calls",
    "gm_calls",
]


def _covers(patterns: Sequence[str], value: str) -> bool:
    if "*" in patterns or value in patterns:
        return True
    _, _, sub = value.partition("/")
    return bool(sub) and f"*/{sub}" in patterns


@dataclass(frozen=True)
class RbacRule:
    groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    namespaced_only: bool  # from a Role

    def grants(self, call: ApiCall) -> bool:
        if self.namespaced_only and call.namespace is None:
            return False
        return (
            ("*" in self.groups or call.group in self.groups)
            and _covers(self.resources, call.resource)
            and ("*" in self.verbs or call.verb in self.verbs)
        )


@dataclass(frozen=True)
class RbacRules:
    rules: tuple[RbacRule, ...]

    @classmethod
    def from_documents(cls, docs: Iterable[Mapping[str, Any]]) -> RbacRules:
        rules: list[RbacRule] = []
        for doc in docs:
            kind = doc.get("kind") if isinstance(doc, Mapping) else None
            if kind not in ("ClusterRole", "Role"):
                continue
            for r in doc.get("rules") or []:
                rules.append(
                    RbacRule(
                        tuple(r.get("apiGroups") or ()),
                        tuple(r.get("resources") or ()),
                        tuple(r.get("verbs") or ()),
                        namespaced_only=kind == "Role",
                    )
                )
        return cls(tuple(rules))

    @classmethod
    def load(cls, path: Path = RBAC_PATH) -> RbacRules:
        with path.open() as fh:
            return cls.from_documents(d for d in yaml.safe_load_all(fh) if d)

    def grants(self, call: ApiCall) -> bool:
        return any(rule.grants(call) for rule in self.rules)

    def denied(self, calls: Iterable[ApiCall]) -> list[ApiCall]:
        """The calls no rule grants, sorted."""
        return sorted(c for c in calls if not self.grants(c))


CORE_RESOURCES = frozenset({("", "events"), ("", "nodes"), ("coordination.k8s.io", "leases")})
"""What the runtime core itself calls (Events, the Node watch, the leader Lease), as
opposed to what a feature's `Feature.access` declares."""


def access_rules(accesses: Iterable[Any]) -> RbacRules:
    """`Feature.access` (`ApiAccess` entries) as rules, to check calls against."""
    return RbacRules(
        tuple(
            RbacRule((a.group,), tuple(a.resources), tuple(a.verbs), namespaced_only=False)
            for a in accesses
        )
    )


def feature_calls(calls: Iterable[ApiCall]) -> set[ApiCall]:
    """The calls made by features, not by the runtime core (see `CORE_RESOURCES`)."""
    return {c for c in calls if (c.group, c.resource) not in CORE_RESOURCES}


def gm_calls(server: APIServer | RequestRecorder) -> set[ApiCall]:
    """Every distinct call the GM (its User-Agent) made to `server` so far (a server, or
    a recorder such as `PROCESS_REQUESTS`, every server of this process)."""
    recorder = server.requests if isinstance(server, APIServer) else server
    return recorder.calls(GM_USER_AGENT.partition("/")[0] + "/")


def denied_gm_calls(server: APIServer | RequestRecorder, path: Path = RBAC_PATH) -> list[ApiCall]:
    """The GM's calls to `server` that the RBAC at `path` does not grant."""
    return RbacRules.load(path).denied(gm_calls(server))


def describe(calls: Iterable[ApiCall]) -> str:
    """One line per verb and resource (namespaces counted: each test has its own)."""
    spaces: dict[tuple[str, str, str], set[str | None]] = {}
    for c in calls:
        spaces.setdefault((c.verb, c.group or "core", c.resource), set()).add(c.namespace)
    lines = []
    for (verb, group, resource), namespaces in sorted(spaces.items()):
        named = sorted(n for n in namespaces if n)
        where = []
        if None in namespaces:
            where.append("cluster-wide")
        if named:
            where.append(f"{len(named)} namespace(s), e.g. {named[0]}")
        lines.append(f"{verb} {group}/{resource} ({', '.join(where)})")
    return "\n".join(lines)


# -- Feature.access against config/rbac.yaml (by (group, resource) -> verbs) ----------

RBAC = RBAC_PATH

Grants = dict[tuple[str, str], set[str]]

# what the runtime core itself calls (message layer's Node watch, the event recorder)
CORE: Grants = {("", "nodes"): {"list", "watch"}, ("", "events"): {"create", "patch"}}


def declared(features: Iterable[Feature]) -> Grants:
    """(group, resource) -> verbs: the core's calls and the features' `access`."""
    out: Grants = {k: set(v) for k, v in CORE.items()}
    for feature in features:
        for a in feature.access:
            for r in a.resources:
                out.setdefault((a.group, r), set()).update(a.verbs)
    return out


def granted() -> Grants:
    """(group, resource) -> verbs of the ClusterRole in config/rbac.yaml."""
    out: Grants = {}
    for doc in yaml.safe_load_all(RBAC.read_text()):
        if doc and doc["kind"] == "ClusterRole":
            for rule in doc["rules"]:
                for g in rule["apiGroups"]:
                    for r in rule["resources"]:
                        out.setdefault((g, r), set()).update(rule["verbs"])
    return out


def allowed(grants: Grants, group: str, res: str, verb: str) -> bool:
    wild = "*/" + res.split("/", 1)[1] if "/" in res else "*"
    return any(
        verb in grants.get((group, r), set()) or "*" in grants.get((group, r), set())
        for r in (res, wild)
    )
