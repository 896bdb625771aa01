"""Trigger evaluation as Sedna's LC does it (`pkg/localcontroller/trigger`), case by case."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from sedna.embedded.triggers import (
    TriggerError,
    TriggerPanic,
    build_trigger,
    compare,
    metric_value,
    parse_float,
)


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
        (1, "", 0, False),
    ],
)
def test_compare(value: float, op: str, threshold: float, expected: bool) -> None:
    assert compare(value, op, threshold) is expected


# What Sedna's LC builds for the deploy trigger: each metric in full, and its deltas.
EVAL_STATS: dict[str, Any] = {
    "precision": [0.79],
    "precision_delta": [0.79 - 0.62],
    "recall_delta": [0.71 - 0.58, -0.5],
}


@pytest.mark.parametrize(
    ("metric", "stats", "expected"),
    [
        ("num_of_samples", {"num_of_samples": 7}, 7.0),
        ("missing", {}, None),
        # A list without an index is no number: Go's convertFloat leaves it 0.
        ("precision_delta", EVAL_STATS, 0.0),
        ("precision", EVAL_STATS, 0.0),
        ("precision_delta[0]", EVAL_STATS, pytest.approx(0.17)),
        ("recall_delta[1]", EVAL_STATS, -0.5),
        ("recall_delta[2]", EVAL_STATS, None),  # out of range
        ("precision_delta[ 0]", EVAL_STATS, None),  # Atoi takes no spaces
        ("precision_delta[x]", EVAL_STATS, None),
        ("precision_delta[99999999999999999999]", EVAL_STATS, None),  # Atoi overflows
        (" precision_delta [0]", EVAL_STATS, pytest.approx(0.17)),  # the name is trimmed
        ("n[0]", {"n": 3}, None),  # not a list
        ("s", {"s": "1.5"}, 1.5),
        ("s", {"s": "x"}, None),
        ("s", {"s": " 1.5"}, None),  # ParseFloat takes no spaces
        ("s", {"s": "1_000"}, None),
        ("s", {"s": "0x1p-2"}, 0.25),
        ("s", {"s": "0x10"}, None),  # a hex float needs its exponent
        ("s", {"s": "1e400"}, None),  # out of range
        ("b", {"b": True}, 0.0),  # a bool, an object, null: 0
        ("o", {"o": {"a": 1}}, 0.0),
        ("z", {"z": None}, 0.0),
    ],
)
def test_metric_value(metric: str, stats: dict[str, Any], expected: Any) -> None:
    assert metric_value(metric, stats) == expected


@pytest.mark.parametrize("metric", ["precision_delta[-1]", "precision_delta[0"])
def test_metrics_sedna_panics_on(metric: str) -> None:
    with pytest.raises(TriggerPanic):
        metric_value(metric, EVAL_STATS)
    assert metric_value(metric, {}) is None  # only once the metric is there


def test_parse_float_words() -> None:
    assert parse_float("+Inf") == float("inf")
    assert parse_float("") is None


def _deploy(metric: str, threshold: float = 0.1) -> dict[str, Any]:
    return {"condition": {"operator": ">", "threshold": threshold, "metric": metric}}


def test_the_sample_deploy_trigger_never_fires_and_the_indexed_one_does() -> None:
    # Sedna's helmet sample: `precision_delta > 0.1` is "isn't need to deploy model".
    assert not build_trigger(_deploy("precision_delta"), field="t")(EVAL_STATS)
    assert build_trigger(_deploy("precision_delta[0]"), field="t")(EVAL_STATS)
    assert not build_trigger(_deploy("precision_delta[0]", 0.2), field="t")(EVAL_STATS)
    # 0 against a negative threshold: the list "holds".
    assert build_trigger(_deploy("precision_delta", -1), field="t")(EVAL_STATS)


def test_condition_and_timer() -> None:
    at = datetime(2024, 1, 1, 21, 30)
    spec: dict[str, Any] = {
        "timer": {"start": "02:00", "end": "20:00"},
        "condition": {"operator": ">", "threshold": 50, "metric": "num_of_samples"},
    }
    trigger = build_trigger(spec, field="t", now=lambda: at)
    assert not trigger({"num_of_samples": 60})  # outside the window
    spec["timer"] = {"start": "21:00", "end": "01:00"}  # wraps past midnight
    trigger = build_trigger(spec, field="t", now=lambda: at)
    assert trigger({"num_of_samples": 60})
    assert not trigger({"num_of_samples": 50})
    spec["timer"] = {}  # empty bounds: "" <= now <= "" never holds
    assert not build_trigger(spec, field="t", now=lambda: at)({"num_of_samples": 60})


def test_outside_the_window_a_panicking_metric_is_not_evaluated() -> None:
    spec = {"timer": {"start": "02:00", "end": "03:00"}, **_deploy("precision_delta[-1]")}
    assert not build_trigger(spec, field="t", now=lambda: datetime(2024, 1, 1, 5))(EVAL_STATS)


@pytest.mark.parametrize(
    "spec", [None, {}, {"timer": {"start": "00:00", "end": "24:00"}}, {"condition": None}]
)
def test_no_condition_never_fires(spec: dict[str, Any] | None) -> None:
    # Sedna's Trigger holds `condition` as a value: absent, its metric is "".
    now = datetime(2024, 1, 1, 12)
    assert not build_trigger(spec, field="t", now=lambda: now)({"num_of_samples": 10**6, "": 1})


@pytest.mark.parametrize(
    ("spec", "where"),
    [
        ({"condition": {"threshold": "lots", "metric": "m", "operator": ">"}}, "threshold"),
        ({"condition": {"threshold": True, "metric": "m", "operator": ">"}}, "threshold"),
        ({"condition": {"threshold": 1, "metric": 5, "operator": ">"}}, "condition.metric"),
        ({"condition": {"threshold": 1, "metric": "m", "operator": [">"]}}, "operator"),
        ({"condition": "num_of_samples > 5"}, "condition"),
        ({"timer": {"start": 120, "end": "20:00"}}, "timer.start"),  # YAML 1.1's 02:00
        ({"timer": "always"}, "timer"),
        ("not a mapping", ": expected a mapping"),
    ],
)
def test_specs_sedna_cannot_decode_name_the_field(spec: Any, where: str) -> None:
    with pytest.raises(TriggerError, match=rf"spec\.trainSpec\.trigger.*{where}"):
        build_trigger(spec, field="spec.trainSpec.trigger")
