"""`status.knowledgeBase`: what the LC's latest report with output models says the
knowledge base holds (Sedna's `updateStatusKnowledgeBase`).

One AIModel per task of each output model's `current_metric` (its id is the task name,
its average precision the task's first metric, its train samples the model's
`number_of_labeled_unseen_sample`), the classes of the first model, and the labeled
samples summed over the models.

Differences from Go, on purpose: Go ranges over the metric maps, so which task comes
first and which metric is "the first" changes from one report to the next; here tasks
and metrics are taken in name order, so the same report always gives the same status.
Go writes the knowledge base and the condition in two status updates (a report can be
half-applied); here both go in one write.
"""

from __future__ import annotations

import struct
from typing import Any

from .spec import CondData


def float32(value: float) -> float:
    """`value` as Go's float32 marshals it: the shortest decimal that reads back the same."""
    try:
        (want,) = struct.unpack("f", struct.pack("f", value))
    except (OverflowError, struct.error):
        return value
    for digits in range(1, 10):
        shown = float(f"{value:.{digits}g}")
        if struct.unpack("f", struct.pack("f", shown))[0] == want:
            return shown
    return float(want)


def empty() -> dict[str, Any]:
    """The zero value Go writes with every status update (the struct is never omitted)."""
    return {
        "AIModels": {"numberOfAIModels": 0},
        "AIClasses": {"numberOfAIClasses": 0},
        "samples": {"numberOfLabeledUnseenSample": 0, "numberOfUnseenSample": 0},
    }


def from_report(data: CondData) -> dict[str, Any] | None:
    """The knowledge base the report's output models describe; None leaves it as it was."""
    models = data.output.models if data.output is not None else None
    if not models:
        return None
    ai_models: list[dict[str, Any]] = []
    samples = 0
    for m in models:
        labeled = m.number_of_labeled_unseen_sample or 0
        for task in sorted(m.current_metric or {}):
            metrics = (m.current_metric or {})[task]
            first = sorted(metrics)[0] if metrics else None
            ai_models.append(
                {
                    "modelID": task,
                    "averagePrecision": float32(metrics[first]) if first is not None else 0.0,
                    "numberOfTrainSamples": labeled,
                }
            )
        samples += labeled
    classes = list(models[0].classes or [])
    kb = empty()
    kb["AIModels"]["numberOfAIModels"] = len(ai_models)
    if ai_models:
        kb["AIModels"]["listOfAIModels"] = ai_models
    kb["AIClasses"]["numberOfAIClasses"] = len(classes)
    if classes:
        kb["AIClasses"]["listOfAIClasses"] = classes
    kb["samples"]["numberOfLabeledUnseenSample"] = samples
    return kb
