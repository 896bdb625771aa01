"""The workload family's status-change line as JSON: job, kind, node and pod are
top-level fields an operator's log collector can filter on (a service has no stage)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest
from loguru import logger

from sedna.runtime.logging import json_sink

from .helpers import Api, reid_job, wait_until


@pytest.fixture()
def json_logs() -> Iterator[io.StringIO]:
    out = io.StringIO()
    sink = logger.add(json_sink(out), level="INFO")
    try:
        yield out
    finally:
        logger.remove(sink)


def test_a_status_change_line_carries_node_and_pod(
    make_gm: Any, api: Api, json_logs: io.StringIO
) -> None:
    make_gm(features=["reid"])
    api.create(reid_job())
    (pod,) = api.wait_pods("reid-demo", 1, "reid")
    api.set_phase(pod, "Running", node="edge0")
    api.set_phase(pod, "Succeeded")
    api.wait_condition("ReidJob", "reid-demo", "Completed")

    def completed() -> dict[str, Any] | None:
        lines = [json.loads(x) for x in json_logs.getvalue().splitlines() if x.strip()]
        return next((x for x in lines if "condition - -> Completed" in x["message"]), None)

    line = wait_until(completed, what="the Completed status line")
    assert line["kind"] == "ReidJob"
    assert line["job"] == f"{api.ns}/reid-demo"
    assert line["node"] == "edge0"
    assert line["pod"] == pod["metadata"]["name"]
    assert "stage" not in line
