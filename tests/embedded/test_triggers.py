"""Sedna's LC trigger semantics, and our fix for list-valued metrics."""

from __future__ import annotations

from datetime import datetime

import pytest

from sedna.embedded.triggers import TriggerError, build_trigger, compare, metric_value


@pytest.mark.parametrize(
    ("value", "op", "threshold", "expected"),
    [
        (501, ">", 500, True),
        (500, ">", 500, False),
        (500, ">=", 500, True),
        (500.0000001, "eq", 500, True),
        (499, "lt", 500, True),
        (500, "<=", 500, True),
        (1, "!=", 2, True),
        (1, "~", 2, False),
    ],
)
def test_compare(value: float, op: str, threshold: float, expected: bool) -> None:
    assert compare(value, op, threshold) is expected


def test_metric_value_forms() -> None:
    stats = {"num_of_samples": 7, "precision_delta": [0.2, 0.0], "s": "1.5", "bad": "x"}
    assert metric_value("num_of_samples", stats) == 7
    assert metric_value("precision_delta[1]", stats) == 0.0
    assert metric_value("precision_delta", stats) == pytest.approx(0.1)  # mean, not Go's 0
    assert metric_value("precision_delta[5]", stats) is None
    assert metric_value("s", stats) == 1.5
    assert metric_value("bad", stats) is None
    assert metric_value("missing", stats) is None


def test_condition_and_timer() -> None:
    at = datetime(2024, 1, 1, 21, 30)
    spec = {
        "timer": {"start": "02:00", "end": "20:00"},
        "condition": {"operator": ">", "threshold": 50, "metric": "num_of_samples"},
    }
    trigger = build_trigger(spec, field="t", now=lambda: at)
    assert not trigger({"num_of_samples": 60})  # outside the window
    spec["timer"] = {"start": "21:00", "end": "01:00"}  # wraps past midnight
    trigger = build_trigger(spec, field="t", now=lambda: at)
    assert trigger({"num_of_samples": 60})
    assert not trigger({"num_of_samples": 50})


def test_unquoted_yaml_times_are_read_back() -> None:
    # PyYAML reads `start: 02:00` as the base-60 integer 120.
    trigger = build_trigger(
        {"timer": {"start": 120, "end": 1200}}, field="t", now=lambda: datetime(2024, 1, 1, 3)
    )
    assert trigger({})


def test_empty_trigger_holds_and_bad_specs_name_the_field() -> None:
    assert build_trigger(None, field="t")({})
    with pytest.raises(TriggerError, match=r"spec.trainSpec.trigger.condition.threshold"):
        build_trigger(
            {"condition": {"threshold": "lots", "metric": "m", "operator": ">"}},
            field="spec.trainSpec.trigger",
        )
