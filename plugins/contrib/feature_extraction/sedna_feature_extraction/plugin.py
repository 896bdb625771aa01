"""Entry point: declares the `feature_extraction` feature (kind FeatureExtractionService).

Like the other multi-edge features it takes no options beyond the framework's
(``enabled``, ``workers``).
"""

from __future__ import annotations

from collections.abc import Sequence

from sedna.runtime import ControllerContext, Feature, FeatureController, hookimpl, workload_access

FEATURE_NAME = "feature_extraction"
KINDS = ("FeatureExtractionService",)


def _build(ctx: ControllerContext) -> FeatureController:
    # Imported here so that listing plugins never imports the controller's dependencies.
    from .controller import FeatureExtractionController

    return FeatureExtractionController(ctx)


@hookimpl
def sedna_features() -> Sequence[Feature]:
    return [
        Feature(
            name=FEATURE_NAME,
            kinds=list(KINDS),
            factory=_build,
            validate_options=None,
            description="Sedna's FeatureExtractionService: a Deployment, its Service, LC metrics",
            access=workload_access("featureextractionservices", models=True),
        )
    ]
