"""Entry point of the plugin: declares the `lifelong_learning` feature and its options.

Options live under `features.lifelong_learning` in gm.yaml (`workers` and `enabled`
belong to the framework). Errors name the key, e.g.
`gm.yaml: features.lifelong_learning.maxCondition: unknown option`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sedna.runtime import (
    ApiAccess,
    ControllerContext,
    Feature,
    FeatureController,
    StagedJobOptions,
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


Options = StagedJobOptions
"""The feature's options are the stage machine's (`maxConditions`, `failureBackoff*`)."""


def validate_options(raw: Mapping[str, Any]) -> Options:
    """Turn the gm.yaml section into `Options`; the first bad key is reported by name."""
    return Options.from_section(raw)


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
