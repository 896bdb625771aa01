"""Which LC hears of a job, per Sedna's LL `syncToEdge` rules. No models: the LL LC
finds everything it needs in the job itself (its conditions carry the stages' models).

The routing is the runtime's `route_by_stage` (Sedna's rules, shared with incremental
learning's): delete to every node involved; while a stage waits, the Dataset's node
(its LC runs the triggers); while it runs, the worker's node; a delete to that node
when the stage ends unless the job lives there anyway. LL's part is what goes out:
the job with kind, apiVersion and (for inserts) its credential, and where its Dataset
lives.

Differences from Sedna, on purpose: a node name that is empty (stage not yet placed)
gets no message (Sedna sends to node "", which nobody reads), and the stage machine
adds the nodes it remembers having sent the job to when it is deleted, so a delete
reaches every LC even when the Dataset is gone too. The delete of a job seen only as
a tombstone is planned from the tombstone's object (Sedna dereferences a nil job there).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sedna.runtime import DELETE, EdgeMessage, attach_credential, route_by_stage

from .spec import KIND

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


def plan(operation: str, job: Mapping[str, Any], lookups: Lookups) -> list[EdgeMessage]:
    """The messages for one job event: `insert` (added/updated) or `delete`."""
    obj = outgoing(job)
    ns = _str_at(obj, "metadata", "namespace")
    ds_name = _str_at(obj, "spec", "dataset", "name")
    dataset_node = _str_at(lookups.dataset(ns, ds_name) if ds_name else None, "spec", "nodeName")
    credential = _str_at(obj, "spec", "credentialName")
    status = obj.get("status")
    routed = dataset_node and isinstance(status, Mapping) and status.get("conditions")
    if operation != DELETE and credential and routed:
        secret = lookups.secret(ns, credential)
        if secret is None:
            lookups.warn(
                f"{KIND} {ns}/{_str_at(obj, 'metadata', 'name')}: credential secret "
                f"{credential} not found; sent without it"
            )
        else:
            attach_credential(obj, secret)
    return route_by_stage(operation, obj, dataset_node)
