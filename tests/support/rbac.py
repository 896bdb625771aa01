"""config/rbac.yaml and `Feature.access`, read for least-privilege tests."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import yaml

from sedna.runtime import Feature

RBAC = Path(__file__).resolve().parents[2] / "config" / "rbac.yaml"

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
