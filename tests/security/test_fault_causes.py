"""The causes found behind the fault suite's rare failures, one regression test each.

Each drives the embedded server's faults and the GM's virtual clock so that the
interleaving that went wrong under load happens every time.
"""

from __future__ import annotations

from pathlib import Path

from incremental_learning.helpers import (
    DS_NODE,
    TRAIN_INPUT,
    start_sample_job,
    whole_second_clock,
)
from support.waiting import wait_until

from sedna.embedded.apiserver import APIServer
from sedna.testing.logs import LogCapture

from .conftest import Api, GMFactory, LCFactory

STATUS = ("incrementallearningjobs/status",)


def _count(api: Api, state: str) -> int:
    return api.states().count(state)


def test_a_landed_report_noted_on_by_the_machine_is_not_appended_again(
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    logs: LogCapture,
    sedna_reference: Path,
    embedded_apiserver: APIServer,
) -> None:
    """The report's write lands but its answer is lost; before the report is retried the
    machine notes a failed create on the new Ready condition. The retry compared the job
    with what it had sent, took the noted condition for unwritten and appended a second
    Train/Ready (under lost pod creates, a second Ready made a second train worker)."""
    clock = whole_second_clock()
    gm = make_gm(clock=clock)
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sedna_reference)
    faults = embedded_apiserver.faults
    faults.lose_responses(verbs=("update",), resources=STATUS, count=1)  # the report's
    faults.fail(500, verbs=("create",), resources=("pods",), count=1)  # the train worker's
    lc.report(api.ns, "train", "ready", input=TRAIN_INPUT)

    def noted() -> bool:
        return any(
            c["type"] == "Ready" and c.get("reason") == "WorkerCreateFailed"
            for c in api.conditions()
        )

    # the report waits for its backoff on the virtual clock, the machine has noted
    wait_until(noted, 10.0, "the failed create noted on Train/Ready")

    def retried() -> bool:
        clock.step(1.0)
        return logs.contains("answer was lost had landed") or _count(api, "Train/Ready") > 1

    wait_until(retried, 10.0, "the report's retry")
    assert _count(api, "Train/Ready") == 1, api.states()
    wait_until(lambda: api.latest() == "Train/Starting", 10.0, "Train/Starting")
    assert len(api.live_pods("train")) == 1
    assert _count(api, "Train/Ready") == 1, api.states()
