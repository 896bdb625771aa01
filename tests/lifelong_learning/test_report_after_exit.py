"""A LifelongLearningJob's train/eval `completed` report keeps its data whichever of the
worker's exit and the LC's report reaches the GM first."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support.late_reports import EXIT_FIRST, REPORT_FIRST, lc_sees, race

from .conftest import GMFactory, LCFactory
from .helpers import EVAL_INPUT, EVAL_OUTPUT, KB_MODEL, TRAIN_INPUT, TRAIN_OUTPUT, Api

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "lifelong-learning"
NODE = "edge-node"  # the example Dataset's node, and its workers'


def _start(api: Api) -> None:
    for name in ("01-dataset.yaml", "02-lifelong-learning-job.yaml"):
        for doc in yaml.safe_load_all((EXAMPLE / name).read_text()):
            if doc:
                api.create(doc)
    api.wait_latest("Train/Waiting")


@pytest.mark.parametrize(
    ("train_order", "eval_order"), [(REPORT_FIRST, EXIT_FIRST), (EXIT_FIRST, REPORT_FIRST)]
)
def test_the_train_and_eval_report_data_survive_either_order(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, train_order: str, eval_order: str
) -> None:
    """Each case drives both orders, one per stage: together, train and eval in both."""
    gm = make_gm()
    lc = make_lc(gm, NODE)
    _start(api)
    data = race(api, lc, "train", train_order, TRAIN_INPUT, TRAIN_OUTPUT)
    assert data["output"]["models"][0]["url"] == KB_MODEL["url"]
    assert api.latest() == "Eval/Waiting"  # the job never stepped back
    assert api.knowledge_base()  # the report's own status fields are written too
    lc_sees(lc, "train", KB_MODEL["url"])

    data = race(api, lc, "eval", eval_order, EVAL_INPUT, EVAL_OUTPUT)
    assert data["output"]["models"][0]["metrics"] == {"precision_score": [0.9]}
    assert api.latest() == "Deploy/Waiting"
    lc_sees(lc, "eval", "precision_score")
