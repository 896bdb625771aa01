"""The gm.yaml options every staged-job feature takes, validated once for all of them.

A staged feature's section (`features.incremental_learning`, `features.lifelong_learning`)
holds the stage machine's tunables under the same names; a feature with options of its
own subclasses `StagedJobOptions` and adds fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from sedna.runtime.plugin_api import FeatureOptionsError
from sedna.runtime.stages.feature import StageOptions


class StagedJobOptions(BaseModel):
    """A staged-job feature's own options.

    `maxConditions`: how many conditions a job keeps (the latest of each stage and the
    LC's latest Completed reports are always kept, six at most, hence the minimum).
    `failureBackoffSeconds`/`failureBackoffMaxSeconds`: the pause before a failed job
    goes back to Train, doubling per consecutive failure (Sedna's 10 s .. 360 s).
    """

    model_config = ConfigDict(extra="forbid", strict=False)

    maxConditions: int = Field(default=50, ge=6)
    failureBackoffSeconds: float = Field(default=10.0, gt=0)
    failureBackoffMaxSeconds: float = Field(default=360.0, gt=0)

    @model_validator(mode="after")
    def _max_above_base(self) -> Self:
        if self.failureBackoffMaxSeconds < self.failureBackoffSeconds:
            raise ValueError("failureBackoffMaxSeconds: must not be below failureBackoffSeconds")
        return self

    @classmethod
    def from_section(cls, raw: Mapping[str, Any] | None) -> Self:
        """The gm.yaml section as options; the first bad key raises `FeatureOptionsError`."""
        try:
            return cls.model_validate(dict(raw or {}))
        except ValidationError as exc:
            raise FeatureOptionsError.from_validation(exc) from None

    def stage_options(self) -> StageOptions:
        """The machine's tunables these options set."""
        return StageOptions(
            max_conditions=self.maxConditions,
            failure_backoff_seconds=self.failureBackoffSeconds,
            failure_backoff_max_seconds=self.failureBackoffMaxSeconds,
        )
