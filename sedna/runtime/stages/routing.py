"""Stage-routed downstream: which LC hears of a staged job, by its latest condition.

Sedna's staged controllers share one skeleton (`syncToEdge` of lifelonglearning, which
incrementallearning extends with models): the LC of the Dataset's node runs the job's
triggers, the node of the running stage (`sedna.io/<Stage>`) gets the job while the
stage runs, and a finished stage's node gets a delete unless the job stays resident
there (the Dataset's node, the Deploy node). A delete goes to every node involved.

Difference from Sedna, on purpose: an empty node name (stage not yet placed) gets no
message (Sedna queues one for node "" that nobody ever reads).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sedna.runtime.stages.conditions import (
    COMPLETED,
    DEPLOY,
    EVAL,
    FAILED,
    RUNNING,
    TRAIN,
    WAITING,
    conditions_of,
)
from sedna.runtime.stages.feature import DELETE, INSERT, EdgeMessage, stage_node

__all__ = ["route_by_stage"]


def route_by_stage(operation: str, job: Mapping[str, Any], dataset_node: str) -> list[EdgeMessage]:
    """The messages for one job event (`insert` or `delete`); `job` is the object to
    send (kind and apiVersion set, credentials attached), `dataset_node` the node of
    its Dataset ("" when unknown)."""
    obj = dict(job)
    nodes = {s: stage_node(job, s) for s in (TRAIN, EVAL, DEPLOY)}
    if operation == DELETE:
        out: list[EdgeMessage] = []
        for node in (dataset_node, nodes[TRAIN], nodes[EVAL], nodes[DEPLOY]):
            if node and node not in {m.node for m in out}:
                out.append(EdgeMessage(node, DELETE, obj))
        return out
    conds = conditions_of(job)
    if not dataset_node or not conds:
        return []
    latest = conds[-1]
    ctype, stage = latest.get("type"), str(latest.get("stage", ""))
    node = nodes.get(stage, "")
    if ctype == WAITING:
        return [EdgeMessage(dataset_node, INSERT, obj)]
    if ctype == RUNNING:
        return [EdgeMessage(node, INSERT, obj)] if node else []
    if ctype in (COMPLETED, FAILED):
        resident = {dataset_node, nodes[DEPLOY]}
        if node and node not in resident:
            return [EdgeMessage(node, DELETE, obj)]
    return []
