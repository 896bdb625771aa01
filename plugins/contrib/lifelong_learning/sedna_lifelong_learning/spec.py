"""Typed, validated views of what the controller reads: the job, its Dataset, condition data.

Informer caches hold raw JSON; only the fields the controller uses are parsed, here,
and a bad field becomes a `SpecError` whose message names the field path
(`spec.trainSpec.trigger.condition.operator: ...`), which goes into an Event and the
latest condition. Unknown fields are ignored, as Go's decoder does.

Beyond Go's GM, the train trigger is checked here: Sedna's GM accepts any trigger and
the LC then silently refuses to start the job (`failed to init train trigger`), so a
typo'd operator left the job waiting forever with nothing on the job itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

KIND = "LifelongLearningJob"
OPERATORS = ("<", "<=", ">", ">=", "=", "==", "!=", "lt", "le", "gt", "ge", "eq", "ne")

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
    try:
        shown = json.dumps(err.get("input"))
    except (TypeError, ValueError):
        shown = repr(err.get("input"))
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


class DatasetRef(_View):
    name: str = Field(min_length=1)
    trainProb: float = Field(strict=False, ge=0, le=1)  # required, as in the CRD


def _clock_time(value: object) -> str:
    """A timer bound, "HH:MM"; a YAML 1.1 loader reads an unquoted 24:00 as 1440 (base 60)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 24 * 60:
        return f"{value // 60:02d}:{value % 60:02d}"
    if isinstance(value, str):
        hh, sep, mm = value.partition(":")
        if sep and hh.isdigit() and mm.isdigit() and int(hh) <= 24 and int(mm) < 60:
            return value
    raise ValueError(f'expected a time of day "HH:MM", got {json.dumps(value)}')


class Timer(_View):
    start: str
    end: str

    @field_validator("start", "end", mode="before")
    @classmethod
    def _time(cls, value: object) -> str:
        return _clock_time(value)


class TriggerCondition(_View):
    operator: str
    threshold: float = Field(strict=False)
    metric: str = Field(min_length=1)

    @field_validator("operator")
    @classmethod
    def _operator(cls, value: str) -> str:
        if value not in OPERATORS:
            raise ValueError(f"unknown operator {value!r} (expected one of {' '.join(OPERATORS)})")
        return value


class Trigger(_View):
    checkPeriodSeconds: int = Field(default=0, ge=0)
    timer: Timer | None = None
    condition: TriggerCondition


class TrainSpec(_Templated):
    trigger: Trigger


class EvalSpec(_Templated):
    pass


class DeploySpec(_Templated):
    pass


class JobSpec(_View):
    dataset: DatasetRef
    trainSpec: TrainSpec
    evalSpec: EvalSpec
    deploySpec: DeploySpec
    credentialName: str = ""
    outputDir: str = Field(min_length=1)


def job_name(job: Mapping[str, Any]) -> str:
    meta = job.get("metadata") or {}
    return f"{KIND} {meta.get('namespace', '')}/{meta.get('name', '')}"


def job_spec(job: Mapping[str, Any]) -> JobSpec:
    """The job's spec, or SpecError naming `spec.<path>`."""
    return _parse(JobSpec, job.get("spec"), job_name(job), "spec")


class DatasetSpec(_View):
    url: str = Field(min_length=1)
    format: str = ""
    nodeName: str = ""
    credentialName: str = ""


def dataset_spec(dataset: Mapping[str, Any]) -> DatasetSpec:
    meta = dataset.get("metadata") or {}
    obj = f"Dataset {meta.get('namespace', '')}/{meta.get('name', '')}"
    return _parse(DatasetSpec, dataset.get("spec"), obj, "spec")


# -- condition data (Sedna's lifelonglearning.ConditionData) ---------------------------


class CondModel(_View):
    """Sedna's runtime.Model, the knowledge base's entry; unknown keys are dropped."""

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
        for key in ("device_soc_versions", "metrics", "history_metric", "current_metric"):
            value = getattr(self, key)
            if value:
                out[key] = value
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
        for part in ("input", "output"):
            section = getattr(self, part)
            if section is None:
                continue
            d: dict[str, Any] = {}
            if section.model is not None:
                d["model"] = section.model.go_dict()
            if section.models:
                d["models"] = [m.go_dict() for m in section.models]
            if part == "input":
                for key in ("dataURL", "dataIndexURL", "outputDir"):
                    if getattr(section, key):
                        d[key] = getattr(section, key)
            out[part] = d
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
