"""What a staged job's Train and Eval workers are built from, as Sedna's IL and LL
controllers both build it: the Dataset, the stage's inputs from the Ready condition,
and the worker names' random suffix."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sedna.runtime.informers import SharedInformer
from sedna.runtime.kube import ApiError
from sedna.runtime.stages.feature import StageBlocked, StageRetry
from sedna.runtime.stages.spec import CondData, DatasetSpec, ObjectSpecError, dataset_spec
from sedna.runtime.workers import MountURL, WorkerMount

STAGE_RESTART_POLICY = "OnFailure"
"""Train and eval workers restart on failure (unless their template says otherwise)."""


def random_suffix(n: int = 5) -> str:
    """utilrand.String(5): lower-case consonants and digits, as in worker names."""
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    return "".join(random.choice(alphabet) for _ in range(n))


@dataclass(frozen=True)
class NamedDataset:
    name: str
    spec: DatasetSpec


def read_input(
    informer: SharedInformer, namespace: str, name: str, what: str
) -> Mapping[str, Any] | None:
    """A job's input (Model, Dataset) from the cache, confirmed with the API on a miss:
    a job's event can come before an input applied with it reaches its cache, and a
    warning for an input that exists would be false. An API error raises `StageRetry`
    (`InputReadFailed`): the API failed, not the input."""
    try:
        return informer.get_or_read(namespace, name)
    except ApiError as exc:
        raise StageRetry("InputReadFailed", f"cannot read {what}: {exc}") from None


def read_dataset(datasets: SharedInformer, namespace: str, name: str) -> NamedDataset:
    """The job's Dataset (`spec.dataset.name`) as `read_input` reads it; `StageBlocked`
    names it when it is missing (`MissingDataset`) or invalid (`InvalidDataset`)."""
    obj = read_input(datasets, namespace, name, f"Dataset {namespace}/{name}")
    if obj is None:
        raise StageBlocked(
            "MissingDataset", f"Dataset {namespace}/{name} (spec.dataset.name) not found"
        )
    try:
        return NamedDataset(name, dataset_spec(obj))
    except ObjectSpecError as exc:
        raise StageBlocked("InvalidDataset", str(exc)) from None


class StageInputError(ValueError):
    """The latest condition's data lacks an input the stage needs; `field` is its path."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def original_dataset(data: CondData, dataset: NamedDataset, name: str = "") -> WorkerMount:
    """``ORIGINAL_DATASET_URL``: the index URL the LC wrote when it has one (sedna#35),
    else the Dataset's URL; an index is downloaded entry by entry (`indirect`)."""
    assert data.input is not None
    original = data.input.dataIndexURL or dataset.spec.url
    return WorkerMount(
        url=MountURL(
            url=original,
            secret_name=dataset.spec.credentialName or None,
            secret_field=f"Dataset {dataset.name}: spec.credentialName",
            download_by_initializer=True,
            indirect=dataset.spec.url != original,
        ),
        name=name,
        env_name="ORIGINAL_DATASET_URL",
    )
