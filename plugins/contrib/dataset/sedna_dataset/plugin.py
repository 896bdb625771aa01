"""Entry point of the plugin: declares the `dataset` feature (kind `Dataset`).

The feature takes no options: Sedna's Dataset controller has no knobs, and a typo'd key
in gm.yaml is then reported by the framework instead of being silently ignored.
"""

from __future__ import annotations

from collections.abc import Sequence

from sedna.runtime import ApiAccess, ControllerContext, Feature, FeatureController, hookimpl

FEATURE_NAME = "dataset"
KINDS = ("Dataset",)

# What the controller calls (the runtime core's Events and Node watch are its own).
ACCESS = (
    ApiAccess("sedna.io", ["datasets"], ["get", "list", "watch"]),
    ApiAccess("sedna.io", ["datasets/status"], ["update"]),
    ApiAccess("", ["secrets"], ["get"]),
)


def _build(ctx: ControllerContext) -> FeatureController:
    # Imported here so that listing plugins never imports the controller's dependencies.
    from .controller import DatasetController

    return DatasetController(ctx)


@hookimpl
def sedna_features() -> Sequence[Feature]:
    return [
        Feature(
            name=FEATURE_NAME,
            kinds=list(KINDS),
            factory=_build,
            validate_options=None,
            description="Sedna's Dataset: sent to the LC of its node, sample counts reported back",
            access=ACCESS,
        )
    ]
