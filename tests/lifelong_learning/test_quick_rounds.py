"""Two rounds within one wall-clock second: a retried report is not taken for the
earlier round's condition.

Regression: after a conflicting status write (409) the report's retry asks whether an earlier try
landed, by comparing the conditions without what the machine notes on them. Condition
timestamps have a second's resolution, so the previous round's Train/Completed (same
stage, same report) looked like the retried one: the report was dropped as "landed"
and the job stayed at Train/Running for good.
"""

from __future__ import annotations

from pathlib import Path

from incremental_learning.helpers import whole_second_clock
from support.waiting import wait_until

from sedna.embedded.apiserver import APIServer

from .conftest import GMFactory, LCFactory
from .helpers import (
    DS_NODE,
    TRAIN_INPUT,
    TRAIN_OUTPUT,
    Api,
    run_round,
    run_stage,
    start_sample_job,
)

STATUS = ("lifelonglearningjobs/status",)


def test_a_retried_report_is_not_the_same_report_of_an_earlier_round(
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    embedded_apiserver: APIServer,
    sample_dir: Path,
) -> None:
    clock = whole_second_clock()  # not stepped before the retry: one wall second
    gm = make_gm(clock=clock)
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    run_round(api, lc)

    run_stage(api, lc, "train", TRAIN_INPUT)
    embedded_apiserver.faults.fail(409, verbs=("update",), resources=STATUS, count=1)
    lc.report(api.ns, "train", "completed", output=TRAIN_OUTPUT)

    def moved_on() -> bool:
        clock.step(1.0)  # the report's retry backoff runs on the virtual clock
        return api.latest() == "Eval/Waiting"

    wait_until(moved_on, 10.0, "the second round's Train/Completed applied")
    assert api.states().count("Train/Completed") == 2, api.states()
