"""The race of a staged job's worker exit with its LC's `completed` report, both ways.

A train or eval worker reports to its LC and then exits, so the GM may see the pod
`Succeeded` before or after the LC's report. Either way, the latest condition of that
stage must carry the report's data (the LC reads the trained model and the metrics
there). Shared by the IL and LL test directories.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sedna.testing import StagedJobApi, StagedJobLC, run_stage

from .waiting import wait_until

REPORT_FIRST = "report-then-exit"
EXIT_FIRST = "exit-then-report"
NEXT = {"train": "Eval/Waiting", "eval": "Deploy/Waiting"}


def latest_of_stage(conds: list[Mapping[str, Any]], stage: str) -> Mapping[str, Any]:
    return [c for c in conds if c.get("stage") == stage.capitalize()][-1]


def race(
    api: StagedJobApi,
    lc: StagedJobLC,
    stage: str,
    order: str,
    stage_input: Mapping[str, Any],
    output: Mapping[str, Any],
) -> dict[str, Any]:
    """Run `stage` to its end in `order`; return the data of the stage's latest condition
    once it has the report's (failing the test if it never does)."""
    pod = run_stage(api, lc, stage, stage_input)
    name = pod["metadata"]["name"]
    if order == REPORT_FIRST:
        lc.report(api.ns, stage, "completed", input=stage_input, output=output)
        api.wait_latest(NEXT[stage])
        api.set_phase(name, "Succeeded")
    else:
        api.set_phase_and_wait(name, "Succeeded", NEXT[stage])
        before = latest_of_stage(api.conditions(), stage)
        assert before["type"] == "Completed"
        assert not before.get("data")  # the exit's Completed: what the LC would misread
        lc.report(api.ns, stage, "completed", input=stage_input, output=output)

    def reported() -> dict[str, Any] | None:
        cond = latest_of_stage(api.conditions(), stage)
        if cond["type"] != "Completed" or not cond.get("data"):
            return None
        data = json.loads(cond["data"])
        return data if isinstance(data, dict) else None

    found = wait_until(reported, 5.0, f"the latest {stage} condition with the report's data")
    assert isinstance(found, dict)
    return found


def lc_sees(lc: StagedJobLC, stage: str, url: str) -> None:
    """The LC is sent the job whose latest condition of `stage` carries the model `url`."""

    def carries(m: Any) -> bool:
        conds = (m.payload.get("status") or {}).get("conditions") or []
        mine = [c for c in conds if c.get("stage") == stage.capitalize()]
        return bool(mine) and url in (mine[-1].get("data") or "")

    lc.wait_for(lc.kind, "insert", lc.job, carries)
