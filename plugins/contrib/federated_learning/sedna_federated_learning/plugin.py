"""Entry point of the plugin: declares the `federated_learning` feature and its options.

Options live under `features.federated_learning` in gm.yaml (`workers` and `enabled`
belong to the framework). Errors name the key, e.g.
`gm.yaml: features.federated_learning.maxConditions: must be at least 3, got 1`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sedna.runtime import (
    ApiAccess,
    ControllerContext,
    Feature,
    FeatureController,
    FeatureOptionsError,
    hookimpl,
)

FEATURE_NAME = "federated_learning"
KINDS = ("FederatedLearningJob",)

ACCESS = (
    ApiAccess("sedna.io", ("federatedlearningjobs",), ("get", "list", "watch")),
    ApiAccess("sedna.io", ("federatedlearningjobs/status",), ("update",)),
    ApiAccess("sedna.io", ("models", "datasets"), ("get", "list", "watch")),
    ApiAccess("sedna.io", ("models/status",), ("update",)),
    ApiAccess("", ("pods",), ("list", "watch", "create", "delete", "patch")),
    ApiAccess("", ("services",), ("get", "list", "watch", "create", "update")),
    ApiAccess("", ("secrets",), ("get",)),
    ApiAccess("", ("events",), ("create", "patch")),
)
"""Every call the controller makes: jobs and their Models/Datasets read through informers
(plus `get` on a cache miss), status writes through the status subresource, pods
listed from the server before a create, pods of another GM annotated when adopted, the
aggregator's Service created and its spec healed."""


class Options(BaseModel):
    """The feature's own options.

    `maxConditions`: how many conditions a job keeps; the oldest round reports go first,
    a Complete or Failed condition is always kept.
    """

    model_config = ConfigDict(extra="forbid", strict=False)

    maxConditions: int = Field(default=50, ge=3)


def validate_options(raw: Mapping[str, Any]) -> Options:
    """Turn the gm.yaml section into `Options`; the first bad key is reported by name."""
    try:
        return Options.model_validate(dict(raw))
    except ValidationError as exc:
        raise FeatureOptionsError.from_validation(exc) from None


def _build(ctx: ControllerContext) -> FeatureController:
    # Imported here so that listing plugins never imports the controller's dependencies.
    from .controller import FederatedLearningController

    return FederatedLearningController(ctx)


@hookimpl
def sedna_features() -> Sequence[Feature]:
    return [
        Feature(
            name=FEATURE_NAME,
            kinds=list(KINDS),
            factory=_build,
            validate_options=validate_options,
            description="Sedna's FederatedLearningJob: an aggregator, training workers, rounds",
            access=ACCESS,
        )
    ]
