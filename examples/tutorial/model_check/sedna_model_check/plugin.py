"""The entry point: what sedna-gm imports to learn what this plugin provides."""

from __future__ import annotations

from collections.abc import Sequence

from sedna.runtime import ApiAccess, ControllerContext, Feature, FeatureController, hookimpl

from .options import validate


def _build(ctx: ControllerContext) -> FeatureController:
    from .controller import ModelCheckController  # imported only when the feature runs

    return ModelCheckController(ctx)


@hookimpl
def sedna_features() -> Sequence[Feature]:
    return [
        Feature(
            name="model_check",  # equal to the entry point's name
            kinds=["Model"],
            factory=_build,
            validate_options=validate,
            description="checks every Model's format and URL, verdicts as Events",
            access=[ApiAccess("sedna.io", ["models"], ["get", "list", "watch"])],
        )
    ]
