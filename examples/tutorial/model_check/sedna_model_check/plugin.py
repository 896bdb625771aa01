"""The entry point and the handlers: every Model is checked, its verdict an Event on it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sedna.runtime import MODELS, DeclarativeFeature, HandlerContext, PermanentError

from .check import problem_of
from .options import validate

feature = DeclarativeFeature(
    "model_check",  # equal to the entry point's name
    description="checks every Model's format and URL, verdicts as Events",
    validate_options=validate,
)


@feature.reconcile(MODELS)
def check(model: Mapping[str, Any], ctx: HandlerContext) -> None:
    """Runs for the current version of each Model: when it is added or changed, and on
    the informer's periodic resync. `-> None`: it writes no status (and asks no RBAC
    for one); its verdict goes to Events."""
    problem = problem_of(model, ctx.options)
    if problem is not None:
        # Retrying cannot fix a spec; the next edit of the Model runs the handler again.
        raise PermanentError(problem)
    ctx.events.normal(model, "ModelValid", f"format {model['spec']['format']} is usable")


# What sedna-gm calls to learn what this plugin provides: the feature, its kinds and
# its RBAC, all derived from the handlers above.
sedna_features = feature.hook()
