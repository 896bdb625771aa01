"""Typed, validated views of the dicts the controller reads: job, Model, Dataset, condition data.

Informer caches hold raw JSON; only the fields the controller uses are parsed, here,
and a bad field becomes a `SpecError` whose message names the object and the field
path (`spec.dataset.name: required field is missing`), which goes into an Event the
user sees with `kubectl describe`. Unknown fields are ignored, as Go's decoder does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

KIND = "IncrementalLearningJob"

M = TypeVar("M", bound=BaseModel)


class SpecError(ValueError):
    """An object does not match what the controller needs; `field` is the full path."""

    def __init__(self, obj: str, field: str, reason: str) -> None:
        super().__init__(f"{obj}: {field}: {reason}")
        self.obj = obj
        self.field = field
        self.reason = reason


class _View(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)


def _describe(err: Mapping[str, Any]) -> tuple[str, str]:
    path = ".".join(str(p) for p in err.get("loc", ()))
    kind = str(err.get("type", ""))
    if kind == "missing":
        return path, "required field is missing"
    if kind == "value_error":
        # our validators say "<sub.path>: <reason>" so the path reaches the user
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        sub, sep, reason = msg.partition(": ")
        if sep and " " not in sub:
            return f"{path}.{sub}" if path else sub, reason
        return path, msg
    value = err.get("input")
    try:
        shown = json.dumps(value)
    except (TypeError, ValueError):
        shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return path, f"{err.get('msg', 'invalid value')}, got {shown}"


def _parse(model: type[M], data: object, obj: str, prefix: str) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        path, reason = _describe(exc.errors()[0])
        field = f"{prefix}.{path}" if path else prefix
        raise SpecError(obj, field, reason) from None


class NameRef(_View):
    name: str = Field(min_length=1)


class DatasetRef(NameRef):
    trainProb: float | None = Field(default=None, strict=False)


class ParaSpec(_View):
    key: str
    value: str


class HardExampleMining(_View):
    name: str = ""
    parameters: list[ParaSpec] | None = None


class DeployModel(NameRef):
    hotUpdateEnabled: bool = False
    pollPeriodSeconds: int = Field(default=60, ge=1)


def _check_template(value: object) -> dict[str, Any]:
    """A PodTemplateSpec with at least one container; kept raw for the worker runtime."""
    if not isinstance(value, dict):
        raise ValueError("expected a pod template object")
    spec = value.get("spec")
    if not isinstance(spec, dict):
        raise ValueError("spec: expected an object")
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        raise ValueError("spec.containers: the pod template needs at least one container")
    for i, c in enumerate(containers):
        if not isinstance(c, dict):
            raise ValueError(f"spec.containers[{i}]: expected an object")
    return value


class _Templated(_View):
    template: dict[str, Any]

    @field_validator("template", mode="before")
    @classmethod
    def _template(cls, value: object) -> dict[str, Any]:
        return _check_template(value)


class TrainSpec(_Templated):
    pass


class EvalSpec(_Templated):
    initialEvalModel: NameRef | None = None


class DeploySpec(_Templated):
    model: DeployModel
    hardExampleMining: HardExampleMining = Field(default_factory=HardExampleMining)


class JobSpec(_View):
    dataset: DatasetRef
    initialModel: NameRef
    trainSpec: TrainSpec
    evalSpec: EvalSpec
    deploySpec: DeploySpec
    credentialName: str = ""
    outputDir: str = ""


def job_spec(job: Mapping[str, Any]) -> JobSpec:
    """The job's spec, or SpecError naming `spec.<path>`."""
    meta = job.get("metadata") or {}
    obj = f"{KIND} {meta.get('namespace', '')}/{meta.get('name', '')}"
    return _parse(JobSpec, job.get("spec"), obj, "spec")


class ModelSpec(_View):
    url: str = Field(min_length=1)
    format: str = ""
    credentialName: str = ""


class DatasetSpec(_View):
    url: str = Field(min_length=1)
    format: str = ""
    nodeName: str = ""
    credentialName: str = ""


def model_spec(model: Mapping[str, Any]) -> ModelSpec:
    meta = model.get("metadata") or {}
    obj = f"Model {meta.get('namespace', '')}/{meta.get('name', '')}"
    return _parse(ModelSpec, model.get("spec"), obj, "spec")


def dataset_spec(dataset: Mapping[str, Any]) -> DatasetSpec:
    meta = dataset.get("metadata") or {}
    obj = f"Dataset {meta.get('namespace', '')}/{meta.get('name', '')}"
    return _parse(DatasetSpec, dataset.get("spec"), obj, "spec")


# -- condition data (Sedna's IncrementalCondData) ------------------------------------


class CondModel(_View):
    """Sedna's runtime.Model; the LC's extra keys are dropped when re-marshalled."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=False)

    format: str = ""
    url: str = ""
    device_soc_versions: list[str] | None = None
    metrics: dict[str, Any] | None = None
    history_metric: float | None = None
    current_metric: dict[str, dict[str, float]] | None = None
    classes: list[str] | None = None
    number_of_labeled_unseen_sample: int | None = None
    number_of_model: int | None = None
    number_of_unseen_sample: int | None = None

    def go_dict(self) -> dict[str, Any]:
        """Field order and omitempty of the Go struct (format, url, classes always)."""
        out: dict[str, Any] = {"format": self.format, "url": self.url}
        if self.device_soc_versions:
            out["device_soc_versions"] = self.device_soc_versions
        if self.metrics:
            out["metrics"] = self.metrics
        if self.history_metric:
            out["history_metric"] = self.history_metric
        if self.current_metric:
            out["current_metric"] = self.current_metric
        out["classes"] = self.classes
        for key in (
            "number_of_labeled_unseen_sample",
            "number_of_model",
            "number_of_unseen_sample",
        ):
            value = getattr(self, key)
            if value:
                out[key] = value
        return out


class CondInput(_View):
    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)

    model: CondModel | None = None
    models: list[CondModel] | None = None
    dataURL: str = ""
    dataIndexURL: str = ""
    outputDir: str = ""

    def model_urls(self) -> list[str]:
        """Sedna's joinModelURLs: the single `model` wins over `models`."""
        if self.model is not None:
            return [self.model.url]
        return [m.url for m in self.models or []]


class CondOutput(_View):
    model: CondModel | None = None
    models: list[CondModel] | None = None


class CondData(_View):
    input: CondInput | None = None
    output: CondOutput | None = None

    def go_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.input is not None:
            i: dict[str, Any] = {}
            if self.input.model is not None:
                i["model"] = self.input.model.go_dict()
            if self.input.models:
                i["models"] = [m.go_dict() for m in self.input.models]
            for key in ("dataURL", "dataIndexURL", "outputDir"):
                if getattr(self.input, key):
                    i[key] = getattr(self.input, key)
            out["input"] = i
        if self.output is not None:
            o: dict[str, Any] = {}
            if self.output.model is not None:
                o["model"] = self.output.model.go_dict()
            if self.output.models:
                o["models"] = [m.go_dict() for m in self.output.models]
            out["output"] = o
        return out

    def marshal(self) -> str:
        """Compact JSON with Go's HTML escaping, as `json.Marshal` writes the condition data."""
        text = json.dumps(self.go_dict(), separators=(",", ":"), ensure_ascii=False)
        return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def cond_data_from(payload: object, obj: str, prefix: str) -> CondData:
    """Condition data from an already decoded JSON value."""
    return _parse(CondData, payload, obj, prefix)


def cond_data(text: object, obj: str, field: str) -> CondData:
    """The data string of a condition; not JSON, or the wrong shape, is a SpecError."""
    if not isinstance(text, str) or not text:
        raise SpecError(obj, field, "no data (the LC's report carries the stage's inputs)")
    try:
        payload = json.loads(text)
    except ValueError as exc:
        raise SpecError(obj, field, f"not JSON ({exc.args[0] if exc.args else exc})") from None
    return cond_data_from(payload, obj, field)
