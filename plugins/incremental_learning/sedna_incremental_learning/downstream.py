"""Which LC hears of a job and its models, per Sedna's `syncToEdge` rules.

A pure planner: given the job (as the informer has it) and look-ups for its Dataset,
Models and secrets, it returns the messages to send. The LC of the dataset's node
runs the job's triggers; the train/eval/deploy nodes (from the `sedna.io/<Stage>`
annotations) get the job while their stage runs and a delete when it ends.

Differences from Sedna, on purpose: a node name that is empty (stage not yet placed)
gets no message (Sedna queues one for node "" that nobody ever reads), and the
controller adds the nodes it remembers having sent a job to when the job is deleted,
so a delete reaches every LC even when the Dataset is gone too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sedna.runtime import (
    DELETE,
    INSERT,
    MODEL_HOT_UPDATE_ANNOTATION_KEY,
    STAGE_ANNOTATION_PREFIX,
    EdgeMessage,
    attach_credential,
    stage_node,
)

from .conditions import (
    COMPLETED,
    DEPLOY,
    EVAL,
    FAILED,
    RUNNING,
    TRAIN,
    WAITING,
    conditions_of,
)
from .spec import KIND

ANNOTATION_PREFIX = STAGE_ANNOTATION_PREFIX

__all__ = ["ANNOTATION_PREFIX", "DELETE", "INSERT", "EdgeMessage", "Getter", "Lookups", "plan"]

Getter = Callable[[str, str], Mapping[str, Any] | None]
"""get(namespace, name) -> object or None."""


@dataclass(frozen=True)
class Lookups:
    dataset: Getter
    model: Getter
    secret: Getter
    warn: Callable[[str], None]


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _str_at(obj: Mapping[str, Any], *path: str) -> str:
    cur: Any = obj
    for p in path:
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(p)
    return cur if isinstance(cur, str) else ""


def _with_credential(obj: dict[str, Any], credential: str, lookups: Lookups, what: str) -> None:
    if not credential:
        return
    ns = _str_at(obj, "metadata", "namespace")
    secret = lookups.secret(ns, credential)
    if secret is None:
        lookups.warn(f"{what}: credential secret {ns}/{credential} not found; sent without it")
        return
    attach_credential(obj, secret)


def job_nodes(job: Mapping[str, Any], lookups: Lookups) -> dict[str, str]:
    """Nodes involved with the job: dataset, train, eval, deploy (deploy only with hot update)."""
    ns = _str_at(job, "metadata", "namespace")
    ds_name = _str_at(job, "spec", "dataset", "name")
    ds = lookups.dataset(ns, ds_name) if ds_name else None
    annotations = (job.get("metadata") or {}).get("annotations") or {}
    return {
        "dataset": _str_at(ds, "spec", "nodeName") if ds is not None else "",
        TRAIN: stage_node(job, TRAIN),
        EVAL: stage_node(job, EVAL),
        DEPLOY: stage_node(job, DEPLOY) if MODEL_HOT_UPDATE_ANNOTATION_KEY in annotations else "",
    }


def _outgoing(obj: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The object as sent: kind and apiVersion set (list responses carry neither).

    A shallow copy, since the message layer encodes it at once and only the top level
    and the credential annotation (see `attach_credential`) differ from the informer's
    object; deep copies here were a large share of the controller's CPU.
    """
    out = dict(obj)
    out["kind"] = kind
    out.setdefault("apiVersion", "sedna.io/v1alpha1")
    return out


def plan(operation: str, job: Mapping[str, Any], lookups: Lookups) -> list[EdgeMessage]:
    """The messages for one job event: `insert` (added/updated) or `delete`.

    The messages share unchanged parts with `job` and the looked-up Models: send them,
    never change them.
    """
    job_obj = _outgoing(job, KIND)
    name = _str_at(job_obj, "metadata", "name")
    ns = _str_at(job_obj, "metadata", "namespace")
    nodes = job_nodes(job_obj, lookups)
    ds_node, train_node, eval_node, deploy_node = (
        nodes["dataset"],
        nodes[TRAIN],
        nodes[EVAL],
        nodes[DEPLOY],
    )
    out: list[EdgeMessage] = []

    if operation == DELETE:
        seen: set[str] = set()
        for node in (ds_node, train_node, eval_node, deploy_node):
            if node and node not in seen:
                seen.add(node)
                out.append(EdgeMessage(node, DELETE, job_obj))
        return out

    if not ds_node:
        return out
    conditions = conditions_of(job_obj)
    if not conditions:
        return out
    latest = conditions[-1]
    current_type = latest.get("type")
    stage = latest.get("stage")
    spec = _mapping(job_obj.get("spec"))
    hot_update = _mapping(_mapping(spec.get("deploySpec")).get("model")).get("hotUpdateEnabled")
    hot_update = hot_update is True
    initial_model = _str_at(spec, "initialModel", "name")
    deploy_model = _str_at(spec, "deploySpec", "model", "name")
    eval_initial = _str_at(spec, "evalSpec", "initialEvalModel", "name")

    _with_credential(job_obj, _str_at(spec, "credentialName"), lookups, f"{KIND} {ns}/{name}")

    def model(model_name: str, node: str) -> None:
        if not node or not model_name:
            return
        m = lookups.model(ns, model_name)
        if m is None:
            lookups.warn(
                f"{KIND} {ns}/{name}: model {ns}/{model_name} not found, not sent to node {node}"
            )
            return
        obj = _outgoing(m, "Model")
        _with_credential(
            obj, _str_at(obj, "spec", "credentialName"), lookups, f"Model {ns}/{model_name}"
        )
        out.append(EdgeMessage(node, INSERT, obj))

    def send_job(node: str) -> None:
        if node:
            out.append(EdgeMessage(node, INSERT, job_obj))

    def delete_job(node: str) -> None:
        if node:
            out.append(EdgeMessage(node, DELETE, job_obj))

    if current_type == WAITING:
        if stage == TRAIN:
            model(initial_model, ds_node)
            send_job(ds_node)
        elif stage == EVAL:
            model(deploy_model, ds_node)
            if eval_initial:
                model(eval_initial, ds_node)
            send_job(ds_node)
        elif stage == DEPLOY:
            deploy_node = eval_node
            model(deploy_model, eval_node)
            if eval_initial and not hot_update:
                model(eval_initial, deploy_node)
            send_job(deploy_node)
    elif current_type == RUNNING:
        if stage == TRAIN:
            send_job(train_node)
        elif stage == EVAL:
            if train_node != eval_node and train_node != ds_node:
                delete_job(train_node)
            send_job(eval_node)
        elif stage == DEPLOY:
            if eval_node != deploy_node and eval_node != ds_node:
                delete_job(eval_node)
            if eval_initial:
                model(eval_initial, deploy_node)
            model(deploy_model, deploy_node)
            send_job(deploy_node)
    elif current_type in (COMPLETED, FAILED):
        if not hot_update:
            deploy_node = eval_node
        resident = {ds_node, deploy_node}
        stage_nodes = {TRAIN: train_node, EVAL: eval_node, DEPLOY: deploy_node}
        node = stage_nodes.get(str(stage), "")
        if node not in resident:
            delete_job(node)
    return out
