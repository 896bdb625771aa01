"""Entry point of the plugin: declares the `incremental_learning` feature and its options.

Options live under `features.incremental_learning` in gm.yaml (`workers` and `enabled`
belong to the framework). Errors name the key, e.g.
`gm.yaml: features.incremental_learning.maxCondition: unknown option`.
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

FEATURE_NAME = "incremental_learning"
KINDS = ("IncrementalLearningJob",)

# What the controller calls (the runtime core's Events and Node watch are its own).
ACCESS = (
    ApiAccess("sedna.io", ["incrementallearningjobs"], ["get", "list", "watch", "patch"]),
    ApiAccess("sedna.io", ["incrementallearningjobs/status"], ["update"]),
    ApiAccess("sedna.io", ["models", "datasets"], ["get", "list", "watch"]),
    ApiAccess("", ["pods"], ["get", "list", "watch", "create", "delete", "patch"]),
    ApiAccess("", ["secrets"], ["get"]),
)


Options = StagedJobOptions
"""The feature's options are the stage machine's (`maxConditions`, `failureBackoff*`)."""


def validate_options(raw: Mapping[str, Any]) -> Options:
    """Turn the gm.yaml section into `Options`; the first bad key is reported by name."""
    return Options.from_section(raw)


def _build(ctx: ControllerContext) -> FeatureController:
    # Imported here so that listing plugins never imports the controller's dependencies.
    from .controller import IncrementalLearningController

    return IncrementalLearningController(ctx)


@hookimpl
def sedna_features() -> Sequence[Feature]:
    return [
        Feature(
            name=FEATURE_NAME,
            kinds=list(KINDS),
            factory=_build,
            validate_options=validate_options,
            description="Sedna's IncrementalLearningJob: train, eval, deploy cycles",
            access=ACCESS,
        )
    ]
