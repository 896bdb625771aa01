"""Entry point of the plugin: declares the `reid` feature (kind ReidJob).

Like the other multi-edge features it takes no options beyond the framework's
(``enabled``, ``workers``).
"""

from __future__ import annotations

from collections.abc import Sequence

from sedna.runtime import ControllerContext, Feature, FeatureController, hookimpl, workload_access

FEATURE_NAME = "reid"
KINDS = ("ReidJob",)


def _build(ctx: ControllerContext) -> FeatureController:
    # Imported here so that listing plugins never imports the controller's dependencies.
    from .controller import ReidJobController

    return ReidJobController(ctx)


@hookimpl
def sedna_features() -> Sequence[Feature]:
    return [
        Feature(
            name=FEATURE_NAME,
            kinds=list(KINDS),
            factory=_build,
            validate_options=None,
            description="Sedna's ReidJob: one ReID worker pod, its LC reports kept",
            access=workload_access("reidjobs"),
        )
    ]
