"""A late LC report never moves a job backwards (the stage machine's staleness hook)."""

from __future__ import annotations

import time
from pathlib import Path

from .conftest import GMFactory, LCFactory
from .helpers import DS_NODE, TRAIN_INPUT, Api, start_sample_job, start_stage, wait_until


def _stale_count(gm: object) -> float:
    metrics = gm.manager.container.metrics()  # type: ignore[attr-defined]
    return float(sum(s.value for m in metrics.lc_reports_stale.collect() for s in m.samples))


def test_a_duplicate_ready_while_the_worker_runs_starts_no_second_worker(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    start_stage(api, lc, "train", TRAIN_INPUT)
    (pod,) = api.live_pods("train")
    api.set_phase_and_wait(pod["metadata"]["name"], "Running", "Train/Running")
    states = api.states()
    lc.report(api.ns, "train", "ready", input=TRAIN_INPUT)  # late: the LC's retry, say
    wait_until(lambda: _stale_count(gm) >= 1, what="the late report counted as stale")
    time.sleep(0.3)  # give a wrongly accepted report the time to land
    assert api.states() == states
    assert len(api.worker_pods("train")) == 1


def test_a_report_for_a_stage_the_job_has_left_is_skipped(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    start_stage(api, lc, "train", TRAIN_INPUT)
    (pod,) = api.live_pods("train")
    api.set_phase_and_wait(pod["metadata"]["name"], "Succeeded", "Eval/Waiting")
    states = api.states()
    lc.report(api.ns, "train", "failed")  # the train worker's last word, arriving late
    wait_until(lambda: _stale_count(gm) >= 1, what="the late report counted as stale")
    time.sleep(0.3)
    assert api.states() == states
    assert api.latest() == "Eval/Waiting"
