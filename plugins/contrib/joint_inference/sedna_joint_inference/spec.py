"""The JointInferenceService spec, checked: every error names its field.

Sedna's CRD requires `cloudWorker` (model, template) and `edgeWorker` (model,
hardExampleMining, template); the API server may not enforce it (and a Go GM would
panic or silently use zero values), so the controller checks it here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sedna.runtime import SpecError, parse_hpa, parse_template, require_mapping, require_str

__all__ = ["JointInferenceSpec", "WorkerSpec", "edge_node", "parse_spec"]

CLOUD = "Cloud"
EDGE = "Edge"


@dataclass(frozen=True)
class WorkerSpec:
    field: str  # spec.cloudWorker / spec.edgeWorker
    model: str
    template: Mapping[str, Any]
    hpa: Mapping[str, Any] | None


@dataclass(frozen=True)
class JointInferenceSpec:
    cloud: WorkerSpec
    edge: WorkerSpec
    hem_name: str
    hem_parameters: list[dict[str, str]] | None


def _worker(spec: Mapping[str, Any], key: str) -> WorkerSpec:
    field = f"spec.{key}"
    worker = require_mapping(spec.get(key), field)
    model = require_mapping(worker.get("model"), f"{field}.model")
    return WorkerSpec(
        field=field,
        model=require_str(model.get("name"), f"{field}.model.name"),
        template=parse_template(worker.get("template"), f"{field}.template"),
        hpa=parse_hpa(worker.get("hpa"), f"{field}.hpa"),
    )


def _parameters(value: Any, field: str) -> list[dict[str, str]] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise SpecError(field, f"expected a list, got {type(value).__name__}")
    out = []
    for i, p in enumerate(value):
        p = require_mapping(p, f"{field}[{i}]")
        key, val = p.get("key", ""), p.get("value", "")
        for name, v in (("key", key), ("value", val)):
            if not isinstance(v, str):
                raise SpecError(f"{field}[{i}].{name}", f"expected a string, got {v!r}")
        out.append({"key": key, "value": val})
    return out


def parse_spec(obj: Mapping[str, Any]) -> JointInferenceSpec:
    spec = require_mapping(obj.get("spec"), "spec")
    cloud = _worker(spec, "cloudWorker")
    edge = _worker(spec, "edgeWorker")
    hem = require_mapping(
        require_mapping(spec.get("edgeWorker"), "spec.edgeWorker").get("hardExampleMining"),
        "spec.edgeWorker.hardExampleMining",
    )
    return JointInferenceSpec(
        cloud=cloud,
        edge=edge,
        hem_name=require_str(hem.get("name"), "spec.edgeWorker.hardExampleMining.name"),
        hem_parameters=_parameters(
            hem.get("parameters"), "spec.edgeWorker.hardExampleMining.parameters"
        ),
    )


def edge_node(obj: Mapping[str, Any]) -> str:
    """`spec.edgeWorker.template.spec.nodeName`, the node whose LC gets the service ("" if none).

    Read leniently: downstream must also work (or say why not) for an invalid spec.
    """
    node: Any = obj.get("spec")
    for key in ("edgeWorker", "template", "spec", "nodeName"):
        node = node.get(key) if isinstance(node, Mapping) else None
    return node if isinstance(node, str) else ""
