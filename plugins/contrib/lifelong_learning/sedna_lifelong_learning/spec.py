"""Typed, validated views of what the controller reads: the job and its train trigger.

The parsing, the Dataset and the condition data are the stage machine's
(`sedna.runtime.parse_view`, `DatasetSpec`, `CondData`); a bad field becomes a
`SpecError` whose message names the field path
(`spec.trainSpec.trigger.condition.operator: ...`), which goes into an Event and the
latest condition. Unknown fields are ignored, as Go's decoder does.

Beyond Go's GM, the train trigger is checked here: Sedna's GM accepts any trigger and
the LC then silently refuses to start the job (`failed to init train trigger`), so a
typo'd operator left the job waiting forever with nothing on the job itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import Field, field_validator

from sedna.runtime import CondData, DatasetSpec, SpecView, TemplatedView, object_name, parse_view
from sedna.runtime import ObjectSpecError as SpecError
from sedna.runtime import cond_data as cond_data
from sedna.runtime import cond_data_from as cond_data_from
from sedna.runtime import dataset_spec as dataset_spec

__all__ = [
    "KIND",
    "CondData",
    "DatasetSpec",
    "JobSpec",
    "SpecError",
    "cond_data",
    "cond_data_from",
    "dataset_spec",
    "job_name",
    "job_spec",
]

KIND = "LifelongLearningJob"
OPERATORS = ("<", "<=", ">", ">=", "=", "==", "!=", "lt", "le", "gt", "ge", "eq", "ne")


class DatasetRef(SpecView):
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


class Timer(SpecView):
    start: str
    end: str

    @field_validator("start", "end", mode="before")
    @classmethod
    def _time(cls, value: object) -> str:
        return _clock_time(value)


class TriggerCondition(SpecView):
    operator: str
    threshold: float = Field(strict=False)
    metric: str = Field(min_length=1)

    @field_validator("operator")
    @classmethod
    def _operator(cls, value: str) -> str:
        if value not in OPERATORS:
            raise ValueError(f"unknown operator {value!r} (expected one of {' '.join(OPERATORS)})")
        return value


class Trigger(SpecView):
    checkPeriodSeconds: int = Field(default=0, ge=0)
    timer: Timer | None = None
    condition: TriggerCondition


class TrainSpec(TemplatedView):
    trigger: Trigger


class EvalSpec(TemplatedView):
    pass


class DeploySpec(TemplatedView):
    pass


class JobSpec(SpecView):
    dataset: DatasetRef
    trainSpec: TrainSpec
    evalSpec: EvalSpec
    deploySpec: DeploySpec
    credentialName: str = ""
    outputDir: str = Field(min_length=1)


def job_name(job: Mapping[str, Any]) -> str:
    return object_name(KIND, job)


def job_spec(job: Mapping[str, Any]) -> JobSpec:
    """The job's spec, or SpecError naming `spec.<path>`."""
    return parse_view(JobSpec, job.get("spec"), job_name(job), "spec")
