"""Typed, validated views for staged jobs: the parsing, the Dataset and the condition data.

Informer caches hold raw JSON; a feature parses only the fields it uses into a
`SpecView` with `parse_view`, and a bad field becomes an `ObjectSpecError` whose message
names the object and the field path (`spec.dataset.name: required field is missing`),
which goes into an Event the user sees with `kubectl describe`. Unknown fields are
ignored, as Go's decoder does.

The condition data (`CondData`) is the same for every staged kind: Sedna's IL
`IncrementalCondData` and LL `ConditionData` share the shape and the JSON the LC reads.
Its URLs are at most `MAX_URL_LENGTH` characters: Sedna's Go GM takes any length, and
an LC that reports a URL of hundreds of KB grows the job's status until the API refuses
every further write (etcd's request limit is 1.5 MiB); the total is bounded where a
report becomes a condition (`sedna.runtime.stages.reports`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from sedna.runtime.workers.template_check import check_pod_template

M = TypeVar("M", bound=BaseModel)

MAX_URL_LENGTH = 4096
"""The longest model, data or output URL a condition may carry (S3 and HTTP URLs of
real deployments are a few hundred characters)."""


def _bounded_url(value: str) -> str:
    if len(value) > MAX_URL_LENGTH:
        raise ValueError(f"too long ({len(value)} characters, at most {MAX_URL_LENGTH})")
    return value


Url = Annotated[str, AfterValidator(_bounded_url)]


class ObjectSpecError(ValueError):
    """An object does not match what the controller needs; `field` is the full path."""

    def __init__(self, obj: str, field: str, reason: str) -> None:
        super().__init__(f"{obj}: {field}: {reason}")
        self.obj = obj
        self.field = field
        self.reason = reason


class SpecView(BaseModel):
    """The base of a typed view: strict types, frozen, unknown fields ignored."""

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


def parse_view(model: type[M], data: object, obj: str, prefix: str) -> M:
    """`data` as `model`, or `ObjectSpecError` naming `<prefix>.<path>` of the first error."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        path, reason = _describe(exc.errors()[0])
        field = f"{prefix}.{path}" if path else prefix
        raise ObjectSpecError(obj, field, reason) from None


def object_name(kind: str, obj: Mapping[str, Any]) -> str:
    """`<Kind> <namespace>/<name>`, how errors name the object."""
    meta = obj.get("metadata") or {}
    return f"{kind} {meta.get('namespace', '')}/{meta.get('name', '')}"


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
    # what the API server would refuse (container names, env values), as the workload
    # kinds check it: the pod's create would fail later with far less to go on
    problem = check_pod_template(value, "")
    if problem is not None:
        field, reason = problem
        raise ValueError(f"{field.removeprefix('.')}: {reason}")
    return value


class TemplatedView(SpecView):
    """A stage's spec: its pod template, with at least one container and nothing the API
    server would refuse in it (`check_pod_template`: container names, env values...)."""

    template: dict[str, Any]

    @field_validator("template", mode="before")
    @classmethod
    def _template(cls, value: object) -> dict[str, Any]:
        return _check_template(value)


class DatasetSpec(SpecView):
    """The Dataset fields a staged job's workers use."""

    url: str = Field(min_length=1)
    format: str = ""
    nodeName: str = ""
    credentialName: str = ""


def dataset_spec(dataset: Mapping[str, Any]) -> DatasetSpec:
    return parse_view(DatasetSpec, dataset.get("spec"), object_name("Dataset", dataset), "spec")


# -- triggers ------------------------------------------------------------------------

TRIGGER_OPERATORS = (">", "<", "=", ">=", "<=", "!=", "==", "gt", "lt", "eq", "ge", "le", "ne")
"""What Sedna's LC trigger (`pkg/localcontroller/trigger`) compares with; any other
operator makes its trigger false forever, so the job would wait for ever."""

_END_OF_DAY = 24 * 60


def _clock_time(value: object, *, end: bool) -> str:
    """A timer bound: "HH:MM" from 00:00 to 23:59, and 24:00 as an end (Sedna's samples).

    The LC compares bounds with the time of day as text ("15:04"), so both digits of
    the hour count. A YAML 1.1 loader reads an unquoted 24:00 as 1440 (base 60).
    """
    last = _END_OF_DAY if end else _END_OF_DAY - 1
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= last:
        return f"{value // 60:02d}:{value % 60:02d}"
    if isinstance(value, str) and len(value) == 5 and value[2] == ":":
        hh, mm = value[:2], value[3:]
        if hh.isdigit() and mm.isdigit() and int(mm) < 60 and int(hh) * 60 + int(mm) <= last:
            return value
    bounds = "00:00-24:00" if end else "00:00-23:59"
    raise ValueError(f'expected a time of day "HH:MM" ({bounds}), got {json.dumps(value)}')


class TriggerTimer(SpecView):
    start: str
    end: str

    @field_validator("start", mode="before")
    @classmethod
    def _start(cls, value: object) -> str:
        return _clock_time(value, end=False)

    @field_validator("end", mode="before")
    @classmethod
    def _end(cls, value: object) -> str:
        return _clock_time(value, end=True)


class TriggerCondition(SpecView):
    operator: str
    threshold: float = Field(strict=False)
    metric: str = Field(min_length=1)

    @field_validator("operator")
    @classmethod
    def _operator(cls, value: str) -> str:
        if value not in TRIGGER_OPERATORS:
            supported = ", ".join(TRIGGER_OPERATORS)
            raise ValueError(f"unsupported operator {json.dumps(value)} (supported: {supported})")
        return value


class StageTrigger(SpecView):
    """A stage's `trigger` (IL's train and deploy, LL's train), checked as the LC reads it.

    Sedna's GM accepts any trigger and its LC then never fires (an unknown operator)
    or compares garbage with the clock (a timer bound like 25:99); the job waits with
    nothing said. `checkPeriodSeconds` must not be negative; 0 is the same as absent
    (Go's `omitempty` drops it and the LC uses its default, 60).
    """

    checkPeriodSeconds: int = 0
    timer: TriggerTimer | None = None
    condition: TriggerCondition

    @field_validator("checkPeriodSeconds")
    @classmethod
    def _period(cls, value: int) -> int:
        if value < 0:
            raise ValueError(
                f"must be a positive number of seconds (absent or 0: the LC's default, 60), "
                f"got {value}"
            )
        return value


# -- condition data ------------------------------------------------------------------


class CondModel(SpecView):
    """Sedna's runtime.Model; the LC's extra keys are dropped when re-marshalled."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=False)

    format: str = ""
    url: Url = ""
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


class CondInput(SpecView):
    model: CondModel | None = None
    models: list[CondModel] | None = None
    dataURL: Url = ""
    dataIndexURL: Url = ""
    outputDir: Url = ""

    def model_urls(self) -> list[str]:
        """Sedna's joinModelURLs: the single `model` wins over `models`."""
        if self.model is not None:
            return [self.model.url]
        return [m.url for m in self.models or []]


class CondOutput(SpecView):
    model: CondModel | None = None
    models: list[CondModel] | None = None


class CondData(SpecView):
    """A condition's `data`: the stage's inputs the LC reports Ready with, its outputs."""

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
    return parse_view(CondData, payload, obj, prefix)


def cond_data(text: object, obj: str, field: str) -> CondData:
    """The data string of a condition; not JSON, or the wrong shape, is an ObjectSpecError."""
    if not isinstance(text, str) or not text:
        raise ObjectSpecError(obj, field, "no data (the LC's report carries the stage's inputs)")
    try:
        payload = json.loads(text)
    except ValueError as exc:
        raise ObjectSpecError(
            obj, field, f"not JSON ({exc.args[0] if exc.args else exc})"
        ) from None
    return cond_data_from(payload, obj, field)
