"""Typed, validated views of what the controller reads: the job and its train trigger.

The parsing, the Dataset and the condition data are the stage machine's
(`sedna.runtime.parse_view`, `DatasetSpec`, `CondData`); a bad field becomes a
`SpecError` whose message names the field path
(`spec.trainSpec.trigger.condition.operator: ...`), which goes into an Event and the
latest condition. Unknown fields are ignored, as Go's decoder does.

Beyond Go's GM, the train trigger (`StageTrigger`: operator, timer bounds,
checkPeriodSeconds) and the pod templates' container names and env values are checked
here: Sedna's GM accepts any trigger and the LC then never fires it, so a typo'd
operator left the job waiting forever with nothing on the job itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from sedna.runtime import (
    CondData,
    DatasetSpec,
    SpecView,
    StageTrigger,
    TemplatedView,
    object_name,
    parse_view,
)
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


class DatasetRef(SpecView):
    name: str = Field(min_length=1)
    trainProb: float = Field(strict=False, ge=0, le=1)  # required, as in the CRD


class TrainSpec(TemplatedView):
    trigger: StageTrigger


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
