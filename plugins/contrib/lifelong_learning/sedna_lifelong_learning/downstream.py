"""Which LC hears of a job, per Sedna's LL `syncToEdge` rules. No models: the LL LC
finds everything it needs in the job itself (its conditions carry the stages' models).

A pure planner: given the job (as the informer has it) and look-ups for its Dataset and
secrets, it returns the messages to send.

- delete: every node involved (the Dataset's, and the `sedna.io/<Stage>` nodes);
- nothing while the Dataset has no node or the job no condition;
- `Waiting`: the Dataset's node (its LC runs the triggers);
- `Running`: the node the stage's worker runs on;
- `Completed`/`Failed`: a delete to the stage's node, unless the job lives there anyway
  (the Dataset's node, or the Deploy node).

Differences from Sedna, on purpose: a node name that is empty (stage not yet placed)
gets no message (Sedna sends to node "", which nobody reads), and the controller adds
the nodes it remembers having sent the job to when it is deleted, so a delete reaches
every LC even when the Dataset is gone too. The delete of a job seen only as a
tombstone is planned from the tombstone's object (Sedna dereferences a nil job there).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sedna.runtime import DELETE, INSERT, EdgeMessage, attach_credential, stage_node

from .spec import KIND

STAGES = ("Train", "Eval", "Deploy")

Getter = Callable[[str, str], Mapping[str, Any] | None]
"""get(namespace, name) -> object or None."""


@dataclass(frozen=True)
class Lookups:
    dataset: Getter
    secret: Getter
    warn: Callable[[str], None]


def _str_at(obj: Mapping[str, Any] | None, *path: str) -> str:
    cur: Any = obj
    for p in path:
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(p)
    return cur if isinstance(cur, str) else ""


def outgoing(job: Mapping[str, Any]) -> dict[str, Any]:
    """The job as sent: kind and apiVersion set (list responses carry neither).

    A shallow copy: only the top level and the credential annotation (see
    `attach_credential`) differ from the informer's object, so it is never changed.
    """
    out = dict(job)
    out["kind"] = KIND
    out.setdefault("apiVersion", "sedna.io/v1alpha1")
    return out


def job_nodes(job: Mapping[str, Any], lookups: Lookups) -> dict[str, str]:
    """The nodes involved: "dataset" and each stage's."""
    ns = _str_at(job, "metadata", "namespace")
    ds_name = _str_at(job, "spec", "dataset", "name")
    ds = lookups.dataset(ns, ds_name) if ds_name else None
    nodes = {"dataset": _str_at(ds, "spec", "nodeName")}
    for stage in STAGES:
        nodes[stage] = stage_node(job, stage)
    return nodes


def plan(operation: str, job: Mapping[str, Any], lookups: Lookups) -> list[EdgeMessage]:
    """The messages for one job event: `insert` (added/updated) or `delete`."""
    obj = outgoing(job)
    nodes = job_nodes(obj, lookups)
    ds_node = nodes["dataset"]
    if operation == DELETE:
        targets = dict.fromkeys(n for n in nodes.values() if n)
        return [EdgeMessage(n, DELETE, obj) for n in targets]
    if not ds_node:
        return []
    conditions = (obj.get("status") or {}).get("conditions")
    if not isinstance(conditions, list) or not conditions:
        return []
    latest = conditions[-1] if isinstance(conditions[-1], Mapping) else {}
    stage, ctype = str(latest.get("stage") or ""), str(latest.get("type") or "")
    node = nodes.get(stage, "")
    credential = _str_at(obj, "spec", "credentialName")
    if credential:
        secret = lookups.secret(_str_at(obj, "metadata", "namespace"), credential)
        if secret is None:
            lookups.warn(
                f"{KIND} {_str_at(obj, 'metadata', 'namespace')}/{_str_at(obj, 'metadata', 'name')}"
                f": credential secret {credential} not found; sent without it"
            )
        else:
            attach_credential(obj, secret)
    if ctype == "Waiting":
        return [EdgeMessage(ds_node, INSERT, obj)]
    if ctype == "Running":
        return [EdgeMessage(node, INSERT, obj)] if node else []
    if ctype in ("Completed", "Failed"):
        resident = {ds_node, nodes["Deploy"]}
        if node and node not in resident:
            return [EdgeMessage(node, DELETE, obj)]
    return []
