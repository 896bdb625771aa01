"""`route_by_stage`: Sedna's staged-job downstream skeleton (lifelonglearning's syncToEdge)."""

from __future__ import annotations

from typing import Any

import pytest

from sedna.runtime import DELETE, INSERT, RealClock, new_condition, route_by_stage

NOW = RealClock().wall()


def _job(stage: str = "", type_: str = "", **nodes: str) -> dict[str, Any]:
    conds = [new_condition(type_, stage, NOW)] if stage else []
    return {
        "kind": "LifelongLearningJob",
        "metadata": {
            "name": "j",
            "namespace": "ns",
            "annotations": {f"sedna.io/{k}": v for k, v in nodes.items()},
        },
        "status": {"conditions": conds},
    }


def _sent(messages: list[Any]) -> list[tuple[str, str]]:
    return [(m.node, m.operation) for m in messages]


@pytest.mark.parametrize(
    ("stage", "type_", "expected"),
    [
        ("Train", "Waiting", [("ds", INSERT)]),
        ("Train", "Ready", []),
        ("Train", "Running", [("t", INSERT)]),
        ("Eval", "Running", [("e", INSERT)]),
        ("Train", "Completed", [("t", DELETE)]),
        ("Eval", "Failed", [("e", DELETE)]),
        ("Deploy", "Completed", []),  # the Deploy node is resident
    ],
)
def test_the_latest_condition_routes_the_job(
    stage: str, type_: str, expected: list[tuple[str, str]]
) -> None:
    job = _job(stage, type_, Train="t", Eval="e", Deploy="d")
    assert _sent(route_by_stage(INSERT, job, "ds")) == expected


def test_a_stage_on_the_dataset_node_keeps_the_job_there() -> None:
    job = _job("Train", "Completed", Train="ds")
    assert route_by_stage(INSERT, job, "ds") == []


def test_nothing_without_a_dataset_node_conditions_or_a_placed_stage() -> None:
    assert route_by_stage(INSERT, _job("Train", "Waiting"), "") == []
    assert route_by_stage(INSERT, _job(), "ds") == []
    assert route_by_stage(INSERT, _job("Train", "Running"), "ds") == []  # not placed yet


def test_a_delete_reaches_every_node_once() -> None:
    job = _job("Eval", "Running", Train="t", Eval="t", Deploy="d")
    assert _sent(route_by_stage(DELETE, job, "ds")) == [
        ("ds", DELETE),
        ("t", DELETE),
        ("d", DELETE),
    ]
    assert _sent(route_by_stage(DELETE, _job(), "")) == []
