"""Round reports: each round of a training run recorded once however the training
nodes' reports interleave, recorded again after a new aggregation worker starts a run
(a spec rollout, a deleted aggregator), malformed rounds rejected; the aggregated
Model's `updateTime` refreshed by every report with metrics."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from support.logs import LogCapture

from sedna.runtime import FakeClock

from .conftest import GMFactory, LCFactory
from .helpers import JOB, MODEL, NODES, Api, sample_job, wait_until

RUN = "NewTrainingRun"


def _rounds(api: Api) -> list[int]:
    return [
        int(c["message"].split(" ")[1])
        for c in api.conditions()
        if c["type"] == "Training" and c.get("reason") == "DoTraining"
    ]


def _history(api: Api) -> list[Any]:
    """The rounds, with the starts of new runs as RUN."""
    out: list[Any] = []
    for c in api.conditions():
        if c.get("reason") == RUN:
            out.append(RUN)
        elif c.get("reason") == "DoTraining":
            out.append(int(c["message"].split(" ")[1]))
    return out


def _start(api: Api, make_gm: GMFactory, make_lc: LCFactory, ref: Path, **gm: Any) -> Any:
    job = sample_job(ref)
    api.inputs(job)
    g = make_gm(**gm)
    lcs = [make_lc(g, n) for n in NODES]
    api.create(job)
    for lc in lcs:
        lc.wait_for("insert")
    api.wait_workers(3)
    return lcs


def _rebuilt(api: Api, before: set[str]) -> bool:
    live = api.live_pods()
    return len(live) == 3 and not before & {p["metadata"]["name"] for p in live}


def test_each_round_is_recorded_once_however_the_nodes_interleave(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    edge1, edge2 = _start(api, make_gm, make_lc, sample_dir)
    edge1.report_round(api.ns, 1)
    edge1.report_round(api.ns, 2)
    wait_until(lambda: _rounds(api) == [1, 2], what="rounds 1, 2")
    # edge2 is behind: its rounds 1 and 2 arrive after edge1's round 2
    for r in (1, 2, 3):
        edge2.report_round(api.ns, r)
    wait_until(lambda: 3 in _rounds(api), what="round 3")
    edge1.report_round(api.ns, 3)  # now edge1 is behind
    edge1.report_round(api.ns, 4)
    wait_until(lambda: 4 in _rounds(api), what="round 4")
    assert _history(api) == [1, 2, 3, 4]


def test_a_spec_rollout_starts_a_new_run_whose_rounds_are_recorded(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path, logs: LogCapture
) -> None:
    edge1, edge2 = _start(api, make_gm, make_lc, sample_dir)
    for r in (1, 2, 3):
        edge1.report_round(api.ns, r)
        edge2.report_round(api.ns, r)
    wait_until(lambda: _rounds(api) == [1, 2, 3], what="rounds 1..3")
    before = {p["metadata"]["name"] for p in api.live_pods()}
    spec = copy.deepcopy(api.job()["spec"])
    spec["trainingWorkers"][0]["template"]["spec"]["containers"][0]["env"][0]["value"] = "16"
    api.fl.patch(api.ns, JOB, {"spec": {"trainingWorkers": spec["trainingWorkers"]}})
    wait_until(lambda: _rebuilt(api, before), what="three new pods")
    marker = next(c for c in api.conditions() if c.get("reason") == RUN)
    assert marker["type"] == "Training" and marker["status"] == "True"
    assert "generation 2" in marker["message"]

    # the new aggregator counts from round 1 again: recorded, once per round
    edge2.report_round(api.ns, 1)
    edge1.report_round(api.ns, 1)
    edge1.report_round(api.ns, 2)
    wait_until(lambda: _history(api) == [1, 2, 3, RUN, 1, 2], what="the new run's rounds")

    # malformed rounds are rejected, named, and change nothing
    where = f"report from node edge1 for FederatedLearningJob {api.ns}/{JOB}"
    for bad in ("3", -1, True, 2.5, None):
        edge1.report(api.ns, {"output": {"ownerInfo": {"currentRound": bad}}})
    logs.wait(where, "content.output.ownerInfo.currentRound: must be an integer >= 0")
    api.wait_event("InvalidReport", "currentRound")
    edge1.report_round(api.ns, 3)
    wait_until(lambda: 3 in _history(api)[4:], what="the next good round")
    assert _history(api) == [1, 2, 3, RUN, 1, 2, 3]


def test_a_deleted_aggregator_starts_a_new_run_only_after_rounds(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    edge1, _ = _start(api, make_gm, make_lc, sample_dir)

    def replace_aggregator() -> None:
        old = api.workers()["aggregation"]["metadata"]
        api.pods.delete(api.ns, old["name"])
        wait_until(
            lambda: (
                (api.workers().get("aggregation") or {}).get("metadata", {}).get("uid")
                not in (None, old["uid"])
            ),
            what="a new aggregator",
        )

    replace_aggregator()  # nothing recorded yet: nothing to separate
    assert all(c.get("reason") != RUN for c in api.conditions())
    edge1.report_round(api.ns, 1)
    edge1.report_round(api.ns, 2)
    wait_until(lambda: _rounds(api) == [1, 2], what="rounds 1, 2")
    replace_aggregator()
    wait_until(lambda: RUN in _history(api), what="the new run's start")
    edge1.report_round(api.ns, 1)
    wait_until(lambda: _history(api) == [1, 2, RUN, 1], what="round 1 again")


def test_the_models_update_time_is_refreshed_by_every_report_with_metrics(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    clock = FakeClock()
    edge1, _ = _start(api, make_gm, make_lc, sample_dir, clock=clock)

    def status() -> dict[str, Any]:
        return dict(api.models.get(api.ns, MODEL).get("status") or {})

    edge1.report_round(api.ns, 1, {"accuracy": 0.5})
    first = wait_until(lambda: status().get("updateTime"), what="updateTime")
    clock.step(60)
    edge1.report_round(api.ns, 2, {"accuracy": 0.5})  # the same metrics
    second = wait_until(
        lambda: status().get("updateTime") not in (None, first) and status()["updateTime"],
        what="a refreshed updateTime",
    )
    assert second > first
    assert status()["metrics"] == [{"key": "accuracy", "value": "0.5"}]
    # no metrics, or malformed ones: updateTime stays
    clock.step(60)
    edge1.report_round(api.ns, 3)
    edge1.report(api.ns, {"output": {"models": [{"metrics": [1]}]}})
    edge1.report_round(api.ns, 4)
    wait_until(lambda: 4 in _rounds(api), what="round 4")
    assert status()["updateTime"] == second
