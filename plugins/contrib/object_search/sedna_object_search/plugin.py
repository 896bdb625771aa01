"""Entry point of the plugin: declares the `object_search` feature (kind ObjectSearchService).

Like the other multi-edge features it takes no options beyond the framework's
(``enabled``, ``workers``).
"""

from __future__ import annotations

from collections.abc import Sequence

from sedna.runtime import ControllerContext, Feature, FeatureController, hookimpl, workload_access

FEATURE_NAME = "object_search"
KINDS = ("ObjectSearchService",)


def _build(ctx: ControllerContext) -> FeatureController:
    # Imported here so that listing plugins never imports the controller's dependencies.
    from .controller import ObjectSearchController

    return ObjectSearchController(ctx)


@hookimpl
def sedna_features() -> Sequence[Feature]:
    return [
        Feature(
            name=FEATURE_NAME,
            kinds=list(KINDS),
            factory=_build,
            validate_options=None,
            description="Sedna's ObjectSearchService: user and ReID Deployments, tracking pods",
            access=workload_access("objectsearchservices"),
        )
    ]
