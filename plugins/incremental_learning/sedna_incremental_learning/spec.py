"""Typed, validated views of what the controller reads: the job and its Model.

The parsing, the Dataset and the condition data are the stage machine's
(`sedna.runtime.parse_view`, `DatasetSpec`, `CondData`); a bad field becomes a
`SpecError` naming the object and the field path (`spec.dataset.name: required field
is missing`), which goes into an Event and the job's latest condition.

Beyond Go's GM, the train and deploy triggers (`StageTrigger`: operator, timer bounds,
checkPeriodSeconds) and the pod templates' container names and env values are checked:
Sedna accepts them and the job then waits for ever (an operator the LC does not know),
trains at any hour (a timer bound like 25:99) or fails at the pod's create.
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
    "ModelSpec",
    "SpecError",
    "cond_data",
    "cond_data_from",
    "dataset_spec",
    "job_spec",
    "model_spec",
]

KIND = "IncrementalLearningJob"


class NameRef(SpecView):
    name: str = Field(min_length=1)


class DatasetRef(NameRef):
    trainProb: float | None = Field(default=None, strict=False)


class ParaSpec(SpecView):
    key: str
    value: str


class HardExampleMining(SpecView):
    name: str = ""
    parameters: list[ParaSpec] | None = None


class DeployModel(NameRef):
    hotUpdateEnabled: bool = False
    pollPeriodSeconds: int = Field(default=60, ge=1)


class TrainSpec(TemplatedView):
    trigger: StageTrigger


class EvalSpec(TemplatedView):
    initialEvalModel: NameRef | None = None


class DeploySpec(TemplatedView):
    model: DeployModel
    trigger: StageTrigger
    hardExampleMining: HardExampleMining = Field(default_factory=HardExampleMining)


class JobSpec(SpecView):
    dataset: DatasetRef
    initialModel: NameRef
    trainSpec: TrainSpec
    evalSpec: EvalSpec
    deploySpec: DeploySpec
    credentialName: str = ""
    outputDir: str = ""


def job_spec(job: Mapping[str, Any]) -> JobSpec:
    """The job's spec, or SpecError naming `spec.<path>`."""
    return parse_view(JobSpec, job.get("spec"), object_name(KIND, job), "spec")


class ModelSpec(SpecView):
    url: str = Field(min_length=1)
    format: str = ""
    credentialName: str = ""


def model_spec(model: Mapping[str, Any]) -> ModelSpec:
    return parse_view(ModelSpec, model.get("spec"), object_name("Model", model), "spec")
