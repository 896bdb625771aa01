"""The stage machine's transition line as JSON: job, kind, stage, node and pod are
top-level fields an operator's log collector can filter on."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from loguru import logger

from sedna.runtime.logging import json_sink

from .conftest import GMFactory, LCFactory
from .helpers import (
    DS_NODE,
    JOB,
    TRAIN_INPUT,
    WORKER_NODE,
    Api,
    start_sample_job,
    wait_until,
)


@pytest.fixture()
def json_logs() -> Iterator[io.StringIO]:
    out = io.StringIO()
    sink = logger.add(json_sink(out), level="INFO")
    try:
        yield out
    finally:
        logger.remove(sink)


def _lines(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(x) for x in out.getvalue().splitlines() if x.strip()]


def test_a_stage_transition_line_carries_stage_node_and_pod(
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    sample_dir: Path,
    json_logs: io.StringIO,
) -> None:
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    lc.report(api.ns, "train", "ready", input=TRAIN_INPUT)
    api.wait_latest("Train/Starting")
    (train,) = api.live_pods("train")
    api.set_phase_and_wait(train["metadata"]["name"], "Running", "Train/Running")

    def starting() -> dict[str, Any] | None:
        return next(
            (
                x
                for x in _lines(json_logs)
                if "stage Train | condition Starting -> Running" in x["message"]
            ),
            None,
        )

    line = wait_until(starting, what="the Train/Running transition line")
    assert line["kind"] == "IncrementalLearningJob"
    assert line["job"] == f"{api.ns}/{JOB}"
    assert line["stage"] == "Train"
    assert line["pod"] == train["metadata"]["name"]
    assert line["node"] == train["spec"]["nodeName"] == WORKER_NODE
    assert "extra" not in line or not {"stage", "node", "pod"} & set(line["extra"])
