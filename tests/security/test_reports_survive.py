"""No LC report lost: transient API errors and lost answers while a report is applied.

Regression tests for: "any error but 409 drops the report (a train/completed with its
two models among them)", and a write whose answer was lost must not be recorded twice.
"""

from __future__ import annotations

from pathlib import Path

from incremental_learning.helpers import (
    DS_NODE,
    TRAIN_INPUT,
    start_sample_job,
    start_stage,
)

from sedna.embedded.apiserver import APIServer

from .conftest import Api, GMFactory, LCFactory

STATUS = ("incrementallearningjobs/status",)


def test_a_report_survives_server_errors(
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    sample_dir: Path,
    embedded_apiserver: APIServer,
) -> None:
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    api.wait_latest("Train/Waiting")
    embedded_apiserver.faults.fail(500, verbs=("update",), resources=STATUS, count=3)
    start_stage(api, lc, "train", TRAIN_INPUT)
    ready = [c for c in api.conditions() if c["stage"] == "Train" and c["type"] == "Ready"]
    assert len(ready) == 1


def test_a_lost_answer_does_not_record_the_report_twice(
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    sample_dir: Path,
    embedded_apiserver: APIServer,
) -> None:
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    api.wait_latest("Train/Waiting")
    before = len(api.conditions())
    embedded_apiserver.faults.lose_responses(verbs=("update",), resources=STATUS, count=1)
    start_stage(api, lc, "train", TRAIN_INPUT)
    conds = api.conditions()
    ready = [c for c in conds if c["stage"] == "Train" and c["type"] == "Ready"]
    assert len(ready) == 1, conds
    assert len(conds) == before + 2  # Ready from the LC, Starting from the GM
