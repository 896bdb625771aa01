"""A compact fault suite: many IL jobs under 5xx, 409, lost answers and watch drops.

Every accepted LC report is recorded exactly once and every job gets exactly one train
pod. (The brief's full suite, 200 jobs with GM kills and forced 410s through every
stage, is larger; this one runs the first stage of 30 jobs.)
"""

from __future__ import annotations

from pathlib import Path

from incremental_learning.helpers import (
    DS_NODE,
    TRAIN_INPUT,
    create_dependencies,
    sample_job,
)
from support.waiting import poll

from sedna.embedded.apiserver import APIServer

from .conftest import Api, GMFactory, LCFactory

JOBS = 30
STATUS = ("incrementallearningjobs/status",)


def test_jobs_converge_under_faults_and_reports_land_once(
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    sedna_reference: Path,
    embedded_apiserver: APIServer,
) -> None:
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    create_dependencies(api, sedna_reference)
    names = [f"job-{i}" for i in range(JOBS)]
    for name in names:
        api.create(sample_job(sedna_reference, name=name))
    for name in names:
        api.wait_latest("Train/Waiting", name=name, timeout=30)
    faults = embedded_apiserver.faults
    faults.fail(500, probability=0.10, verbs=("update",), resources=STATUS)
    faults.fail(409, probability=0.05, verbs=("update",), resources=STATUS)
    faults.lose_responses(every=7, verbs=("update",), resources=STATUS)
    faults.close_watches_after(200)
    for name in names:
        lc.report(api.ns, "train", "ready", name=name, input=TRAIN_INPUT)

    def converged() -> bool:
        return all(api.latest(n) == "Train/Starting" for n in names)

    poll(converged, 60, interval=0.2, failure="every job to reach Train/Starting")
    faults.reset()
    for name in names:
        conds = api.conditions(name)
        ready = [c for c in conds if c["stage"] == "Train" and c["type"] == "Ready"]
        assert len(ready) == 1, (name, conds)
        assert len(api.worker_pods("train", name=name)) == 1, name
