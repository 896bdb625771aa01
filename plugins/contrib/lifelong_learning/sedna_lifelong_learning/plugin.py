"""Entry point of the plugin: declares the `lifelong_learning` feature and its options.

Options live under `features.lifelong_learning` in gm.yaml (`workers` and `enabled`
belong to the framework). Errors name the key, e.g.
`gm.yaml: features.lifelong_learning.maxConditions: must be at least 6, got 2`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from sedna.runtime import (
    ApiAccess,
    ControllerContext,
    Feature,
    FeatureController,
    FeatureOptionsError,
    hookimpl,
)

FEATURE_NAME = "lifelong_learning"
KINDS = ("LifelongLearningJob",)

ACCESS = (
    ApiAccess("sedna.io", ["lifelonglearningjobs"], ["get", "list", "watch", "patch"]),
    ApiAccess("sedna.io", ["lifelonglearningjobs/status"], ["update"]),
    ApiAccess("sedna.io", ["datasets"], ["get", "list", "watch"]),
    ApiAccess("", ["pods"], ["get", "list", "watch", "create", "delete", "patch"]),
    ApiAccess("", ["secrets"], ["get"]),
)
"""Every API call the controller makes (Events are the runtime core's)."""


class Options(BaseModel):
    """The feature's own options.

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
    def _max_above_base(self) -> Options:
        if self.failureBackoffMaxSeconds < self.failureBackoffSeconds:
            raise ValueError("failureBackoffMaxSeconds: must not be below failureBackoffSeconds")
        return self


def _reason(err: Mapping[str, Any]) -> tuple[str, str]:
    loc = ".".join(str(p) for p in err.get("loc", ()))
    if err.get("type") == "extra_forbidden":
        return loc, "unknown option"
    msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
    if not loc:
        key, _, rest = msg.partition(": ")
        return key, rest or msg
    return loc, f"{msg}, got {err.get('input')!r}"


def validate_options(raw: Mapping[str, Any]) -> Options:
    """Turn the gm.yaml section into `Options`; the first bad key is reported by name."""
    try:
        return Options.model_validate(dict(raw))
    except ValidationError as exc:
        key, reason = _reason(exc.errors()[0])
        raise FeatureOptionsError(key, reason) from None


def _build(ctx: ControllerContext) -> FeatureController:
    # Imported here so that listing plugins never imports the controller's dependencies.
    from .controller import LifelongLearningController

    return LifelongLearningController(ctx)


@hookimpl
def sedna_features() -> Sequence[Feature]:
    return [
        Feature(
            name=FEATURE_NAME,
            kinds=list(KINDS),
            factory=_build,
            validate_options=validate_options,
            description="Sedna's LifelongLearningJob: train, eval, deploy with a knowledge base",
            access=ACCESS,
        )
    ]
