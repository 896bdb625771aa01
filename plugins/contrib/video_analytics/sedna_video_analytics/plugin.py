"""Entry point of the plugin: declares the `video_analytics` feature (kind VideoAnalyticsJob).

Like the other multi-edge features it takes no options beyond the framework's
(``enabled``, ``workers``).
"""

from __future__ import annotations

from collections.abc import Sequence

from sedna.runtime import ControllerContext, Feature, FeatureController, hookimpl, workload_access

FEATURE_NAME = "video_analytics"
KINDS = ("VideoAnalyticsJob",)


def _build(ctx: ControllerContext) -> FeatureController:
    # Imported here so that listing plugins never imports the controller's dependencies.
    from .controller import VideoAnalyticsJobController

    return VideoAnalyticsJobController(ctx)


@hookimpl
def sedna_features() -> Sequence[Feature]:
    return [
        Feature(
            name=FEATURE_NAME,
            kinds=list(KINDS),
            factory=_build,
            validate_options=None,
            description="Sedna's VideoAnalyticsJob: a worker pod and its Service",
            access=workload_access("videoanalyticsjobs", models=True),
        )
    ]
