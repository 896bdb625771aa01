"""model_refs: each Model's status.metrics counts the IncrementalLearningJobs using it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sedna.runtime import INCREMENTAL_LEARNING_JOBS, MODELS, DeclarativeFeature, HandlerContext

METRIC = "referencingJobs"
feature = DeclarativeFeature("model_refs", description="counts the jobs that use each Model")


@feature.index(INCREMENTAL_LEARNING_JOBS, of=MODELS)
def models_of(job: Mapping[str, Any]) -> Iterable[str]:
    """The Models a job names, in its namespace (the IL spec has three references)."""
    spec = job.get("spec") or {}
    refs = [
        spec.get("initialModel"),
        (spec.get("deploySpec") or {}).get("model"),
        (spec.get("evalSpec") or {}).get("initialEvalModel"),
    ]
    return {ref["name"] for ref in refs if isinstance(ref, Mapping) and ref.get("name")}


@feature.reconcile(MODELS)
def count(model: Mapping[str, Any], ctx: HandlerContext) -> Mapping[str, Any]:
    """Runs for every version of a Model and whenever a job naming it changes."""
    metrics = (model.get("status") or {}).get("metrics") or []
    kept = [m for m in metrics if m.get("key") != METRIC]  # other writers' metrics stay
    jobs = ctx.related(models_of, model)
    return {"metrics": [*kept, {"key": METRIC, "value": str(len(jobs))}]}


sedna_features = feature.hook()
