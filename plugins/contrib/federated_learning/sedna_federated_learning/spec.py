"""Typed, validated views of a FederatedLearningJob, its Models and Datasets.

Informer caches hold raw JSON; only the fields the controller uses are read, here, and
a bad field becomes a `SpecError` naming its path (`spec.trainingWorkers[1].dataset.name:
required`), which reaches the user as an Event and a condition. Unknown fields are
ignored, as Go's decoder does. Hand-written rather than a schema library: the job is
small, and the error paths must match the CRD's field names exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

KIND = "FederatedLearningJob"
WIRE_KIND = "federatedlearningjob"
API_VERSION = "sedna.io/v1alpha1"

Obj = Mapping[str, Any]


class SpecError(ValueError):
    """An object lacks what the controller needs; `field` is the full path in it."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


@dataclass(frozen=True)
class S3Transmitter:
    agg_data_path: str
    credential_name: str


@dataclass(frozen=True)
class TrainingWorker:
    index: int
    dataset: str
    template: Obj
    node: str  # "" when the template names no node

    @property
    def field(self) -> str:
        return f"spec.trainingWorkers[{self.index}]"


@dataclass(frozen=True)
class JobSpec:
    model: str
    aggregation_template: Obj
    training: tuple[TrainingWorker, ...]
    pretrained_model: str
    s3: S3Transmitter | None


@dataclass(frozen=True)
class StorageRef:
    """What a worker needs of a Model or Dataset: its URL and credential secret."""

    url: str
    credential_name: str


def _object(value: Any, field: str, *, required: bool = True) -> Obj:
    if value is None and not required:
        return {}
    if value is None:
        raise SpecError(field, "required")
    if not isinstance(value, Mapping):
        raise SpecError(field, f"must be an object, got {_type(value)}")
    return value


def _string(value: Any, field: str, *, required: bool = True) -> str:
    if value is None or value == "":
        if required:
            raise SpecError(field, "required")
        return ""
    if not isinstance(value, str):
        raise SpecError(field, f"must be a string, got {_type(value)}")
    return value


def _type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Sequence):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return "null"


def _template(value: Any, field: str) -> Obj:
    template = _object(value, field)
    spec = _object(template.get("spec"), f"{field}.spec")
    containers = spec.get("containers")
    if containers is None:
        raise SpecError(f"{field}.spec.containers", "required")
    if not isinstance(containers, list):
        raise SpecError(f"{field}.spec.containers", f"must be a list, got {_type(containers)}")
    if not containers:
        raise SpecError(f"{field}.spec.containers", "must name at least one container")
    for i, c in enumerate(containers):
        _object(c, f"{field}.spec.containers[{i}]")
    _string(spec.get("nodeName"), f"{field}.spec.nodeName", required=False)
    _object(spec.get("nodeSelector"), f"{field}.spec.nodeSelector", required=False)
    _object(template.get("metadata"), f"{field}.metadata", required=False)
    return template


def _name_ref(parent: Any, field: str, *, required: bool = True) -> str:
    ref = _object(parent, field, required=required)
    return _string(ref.get("name"), f"{field}.name", required=required)


def job_spec(job: Obj) -> JobSpec:
    """The job's spec, validated; raises `SpecError` naming the first bad field."""
    spec = _object(job.get("spec"), "spec")
    agg = _object(spec.get("aggregationWorker"), "spec.aggregationWorker")
    model = _name_ref(agg.get("model"), "spec.aggregationWorker.model")
    agg_template = _template(agg.get("template"), "spec.aggregationWorker.template")

    raw_workers = spec.get("trainingWorkers")
    if raw_workers is None:
        raise SpecError("spec.trainingWorkers", "required")
    if not isinstance(raw_workers, list):
        raise SpecError("spec.trainingWorkers", f"must be a list, got {_type(raw_workers)}")
    if not raw_workers:
        raise SpecError("spec.trainingWorkers", "must name at least one training worker")
    workers = []
    for i, raw in enumerate(raw_workers):
        field = f"spec.trainingWorkers[{i}]"
        worker = _object(raw, field)
        dataset = _name_ref(worker.get("dataset"), f"{field}.dataset")
        template = _template(worker.get("template"), f"{field}.template")
        workers.append(TrainingWorker(i, dataset, template, node_of_template(template)))

    pretrained = _name_ref(spec.get("pretrainedModel"), "spec.pretrainedModel", required=False)
    transmitter = _object(spec.get("transmitter"), "spec.transmitter", required=False)
    _object(transmitter.get("ws"), "spec.transmitter.ws", required=False)
    s3: S3Transmitter | None = None
    if transmitter.get("s3") is not None:
        raw_s3 = _object(transmitter.get("s3"), "spec.transmitter.s3")
        s3 = S3Transmitter(
            _string(raw_s3.get("aggDataPath"), "spec.transmitter.s3.aggDataPath"),
            _string(
                raw_s3.get("credentialName"), "spec.transmitter.s3.credentialName", required=False
            ),
        )
    return JobSpec(model, agg_template, tuple(workers), pretrained, s3)


def node_of_template(template: Obj) -> str:
    """The node a pod template pins: `nodeName`, else a `kubernetes.io/hostname` selector."""
    spec = template.get("spec")
    if not isinstance(spec, Mapping):
        return ""
    name = spec.get("nodeName")
    if isinstance(name, str) and name:
        return name
    selector = spec.get("nodeSelector")
    if isinstance(selector, Mapping):
        host = selector.get("kubernetes.io/hostname")
        if isinstance(host, str):
            return host
    return ""


def training_nodes(job: Obj) -> set[str]:
    """The nodes of the job's training workers, read leniently (for downstream and trust).

    A malformed job still reaches the nodes its well-formed entries name, and a delete
    reaches every node an earlier version could have been sent to.
    """
    spec = job.get("spec")
    workers = spec.get("trainingWorkers") if isinstance(spec, Mapping) else None
    nodes: set[str] = set()
    for worker in workers if isinstance(workers, list) else []:
        if isinstance(worker, Mapping) and isinstance(worker.get("template"), Mapping):
            node = node_of_template(worker["template"])
            if node:
                nodes.add(node)
    return nodes


def storage_ref(obj: Obj, what: str) -> StorageRef:
    """A Model's or Dataset's URL and credential; `what` names it in errors.

    An empty URL is no mount at all, as in Sedna's `addWorkerMount`.
    """
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        raise SpecError(f"{what}: spec", "required")
    url = spec.get("url")
    if url is not None and not isinstance(url, str):
        raise SpecError(f"{what}: spec.url", f"must be a string, got {_type(url)}")
    cred = spec.get("credentialName")
    return StorageRef(url or "", cred if isinstance(cred, str) else "")
