"""Entry point of the plugin: declares the `joint_inference` feature (kind JointInferenceService).

The feature takes no options (Sedna's controller has none), so a typo'd key in gm.yaml
is reported by the framework instead of being silently ignored.
"""

from __future__ import annotations

from collections.abc import Sequence

from sedna.runtime import ApiAccess, ControllerContext, Feature, FeatureController, hookimpl

FEATURE_NAME = "joint_inference"
KINDS = ("JointInferenceService",)

_READ = ("get", "list", "watch")
_OWN = ("get", "list", "watch", "create", "update", "delete")

ACCESS = (
    ApiAccess("sedna.io", ("jointinferenceservices", "models"), _READ),
    ApiAccess("sedna.io", ("jointinferenceservices/status",), ("get", "update")),
    ApiAccess("apps", ("deployments",), _OWN),
    ApiAccess("", ("services",), _OWN),
    ApiAccess("autoscaling", ("horizontalpodautoscalers",), _OWN),
    ApiAccess("", ("secrets",), ("get",)),
    ApiAccess("", ("events",), ("create", "patch")),
)
"""Every call the controller makes (status written through the subresource, model
credentials read for the storage initializer, Events recorded)."""


def _build(ctx: ControllerContext) -> FeatureController:
    # Imported here so that listing plugins never imports the controller's dependencies.
    from .controller import JointInferenceController

    return JointInferenceController(ctx)


@hookimpl
def sedna_features() -> Sequence[Feature]:
    return [
        Feature(
            name=FEATURE_NAME,
            kinds=list(KINDS),
            factory=_build,
            validate_options=None,
            description="Sedna's JointInferenceService: cloud and edge inference workers",
            access=ACCESS,
        )
    ]
