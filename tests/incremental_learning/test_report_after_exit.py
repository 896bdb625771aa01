"""An IncrementalLearningJob's train/eval `completed` report keeps its data whichever of
the worker's exit and the LC's report reaches the GM first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from support.late_reports import EXIT_FIRST, REPORT_FIRST, latest_of_stage, lc_sees, race
from support.logs import LogCapture
from support.waiting import wait_until

from sedna.testing import run_stage

from .conftest import GMFactory, LCFactory
from .helpers import TRAIN_INPUT, Api

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "incremental-learning"
NODE = "edge-node"  # the example Dataset's node, and its workers'
TRAINED = {"format": "ckpt", "url": "/output/train/1/model.ckpt"}
EVAL_INPUT: dict[str, Any] = {
    "models": [TRAINED, {"format": "pb", "url": "/models/deploy_model/saved_model.pb"}],
    "dataURL": "/data/eval/1.txt",
}
EVAL_OUTPUT: dict[str, Any] = {
    "models": [
        {**TRAINED, "metrics": {"precision": [0.93]}},
        {
            "format": "pb",
            "url": "/models/deploy_model/saved_model.pb",
            "metrics": {"precision": [0.7]},
        },
    ]
}


def _start(api: Api) -> None:
    for name in ("01-models.yaml", "02-dataset.yaml", "03-incremental-learning-job.yaml"):
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
    """Each case drives both orders, one per stage, so that the two cases together
    cover train and eval in both orders."""
    gm = make_gm()
    lc = make_lc(gm, NODE)
    _start(api)
    data = race(api, lc, "train", train_order, TRAIN_INPUT, {"models": [TRAINED]})
    assert data["output"]["models"][0]["url"] == TRAINED["url"]
    assert api.latest() == "Eval/Waiting"  # the job never stepped back
    lc_sees(lc, "train", TRAINED["url"])

    data = race(api, lc, "eval", eval_order, EVAL_INPUT, EVAL_OUTPUT)
    assert data["output"]["models"][0]["metrics"] == {"precision": [0.93]}
    assert data["input"]["models"][0]["url"] == TRAINED["url"]
    assert api.latest() == "Deploy/Waiting"
    lc_sees(lc, "eval", "0.93")


def test_late_reports_without_data_or_after_the_data_change_nothing(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, logs: LogCapture
) -> None:
    """Hostile or repeated reports after the exit: a data-less `completed` adds nothing
    (nor appends a Completed that would step the job back), and once the data is in,
    another report with other data is stale, not a second fill."""
    gm = make_gm()
    lc = make_lc(gm, NODE)
    _start(api)
    pod = run_stage(api, lc, "train", TRAIN_INPUT)
    api.set_phase_and_wait(pod["metadata"]["name"], "Succeeded", "Eval/Waiting")
    states = api.states()
    lc.report(api.ns, "train", "completed")  # no data at all
    logs.wait("moved past the report meanwhile, not applied")
    assert api.states() == states
    assert not latest_of_stage(api.conditions(), "train").get("data")

    lc.report(api.ns, "train", "completed", input=TRAIN_INPUT, output={"models": [TRAINED]})
    wait_until(lambda: latest_of_stage(api.conditions(), "train").get("data"), 5.0, "filled")
    conds = api.conditions()
    other = {"models": [{"format": "ckpt", "url": "/evil/model.ckpt"}]}
    lc.report(api.ns, "train", "completed", input=TRAIN_INPUT, output=other)
    lc.report(api.ns, "train", "completed")
    metrics = gm.manager.container.metrics()  # type: ignore[attr-defined]

    def stale() -> float:
        return float(sum(s.value for m in metrics.lc_reports_stale.collect() for s in m.samples))

    wait_until(lambda: stale() >= 2, 5.0, "both reports counted as stale")
    assert api.states() == states
    assert api.conditions() == conds
