"""What a staged job's Train and Eval workers are built from, as Sedna's IL and LL
controllers both build it: the Dataset, the stage's inputs from the Ready condition,
and the worker names' random suffix."""

from __future__ import annotations

import random
from dataclasses import dataclass

from sedna.runtime.stages.spec import CondData, DatasetSpec
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
