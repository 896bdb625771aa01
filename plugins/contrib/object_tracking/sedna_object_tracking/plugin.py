"""Entry point of the plugin: declares the `object_tracking` feature (kind ObjectTrackingService).

Like the other multi-edge features it takes no options beyond the framework's
(``enabled``, ``workers``).
"""

from __future__ import annotations

from collections.abc import Sequence

from sedna.runtime import ControllerContext, Feature, FeatureController, hookimpl, workload_access

FEATURE_NAME = "object_tracking"
KINDS = ("ObjectTrackingService",)


def _build(ctx: ControllerContext) -> FeatureController:
    # Imported here so that listing plugins never imports the controller's dependencies.
    from .controller import ObjectTrackingController

    return ObjectTrackingController(ctx)


@hookimpl
def sedna_features() -> Sequence[Feature]:
    return [
        Feature(
            name=FEATURE_NAME,
            kinds=list(KINDS),
            factory=_build,
            validate_options=None,
            description="ObjectTrackingService (our addition): a ReID Deployment and tracking pods",
            access=workload_access("objecttrackingservices"),
        )
    ]
