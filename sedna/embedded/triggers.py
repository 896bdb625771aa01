"""Sedna's LC trigger language (`trigger.condition`, `trigger.timer`), for the simulated LC.

Semantics follow Sedna's `pkg/localcontroller/trigger`: a trigger is the AND of an
optional timer range (local "HH:MM" strings compared as text, ranges may wrap past
midnight) and an optional binary condition on one metric, `metric` or `metric[i]`,
with operators `>`/`gt`, `>=`/`ge`, `=`/`==`/`eq`, `!=`/`ne`, `<=`/`le`, `<`/`lt` and
equality within 1e-6.

One difference, on purpose: Go turns a list-valued metric without an index (such as
`precision_delta`, which the eval results always make a list) into 0, so the deploy
trigger of Sedna's own helmet-detection sample can never fire. Here such a metric
is compared by its mean; with one element that is simply its value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

_EPS = 1e-6


class TriggerError(ValueError):
    """A trigger the LC cannot evaluate; the message names the field."""


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    if isinstance(value, list | tuple):
        nums = [_number(v) for v in value]
        good = [n for n in nums if n is not None]
        if not good or len(good) != len(nums):
            return None
        return sum(good) / len(good)
    return None


def metric_value(metric: str, stats: Mapping[str, Any]) -> float | None:
    """The value of `metric` or `metric[i]` in `stats`, or None when absent or not numeric."""
    left = metric.find("[")
    if left == -1:
        if metric not in stats:
            return None
        return _number(stats[metric])
    right = metric.rfind("]")
    name = metric[:left].strip()
    try:
        idx = int(metric[left + 1 : right])
    except ValueError:
        return None
    top = stats.get(name)
    if not isinstance(top, list | tuple) or not 0 <= idx < len(top):
        return None
    return _number(top[idx])


def compare(value: float, operator: str, threshold: float) -> bool:
    equal = abs(value - threshold) < _EPS
    if operator in ("gt", ">"):
        return not equal and value > threshold
    if operator in ("ge", ">="):
        return equal or value >= threshold
    if operator in ("eq", "=", "=="):
        return equal
    if operator in ("ne", "!="):
        return not equal
    if operator in ("le", "<="):
        return equal or value <= threshold
    if operator in ("lt", "<"):
        return not equal and value < threshold
    return False


Trigger = Callable[[Mapping[str, Any]], bool]


def _hhmm(value: Any) -> str:
    """A timer bound as "HH:MM"; YAML 1.1 loaders read an unquoted 02:00 as 120 (base 60)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value // 60:02d}:{value % 60:02d}"
    return str(value or "")


def build_trigger(
    spec: Mapping[str, Any] | None, *, field: str, now: Callable[[], datetime] = datetime.now
) -> Trigger:
    """A predicate over the stats dict; an empty spec always holds (Go's empty AND)."""
    spec = spec or {}
    parts: list[Trigger] = []
    cond = spec.get("condition")
    if cond is not None:
        if not isinstance(cond, Mapping):
            raise TriggerError(f"{field}.condition: expected a mapping")
        threshold = _number(cond.get("threshold"))
        if threshold is None:
            raise TriggerError(f"{field}.condition.threshold: expected a number")
        operator = str(cond.get("operator") or "")
        metric = str(cond.get("metric") or "")
        if not metric:
            raise TriggerError(f"{field}.condition.metric: required")

        def condition(stats: Mapping[str, Any]) -> bool:
            value = metric_value(metric, stats)
            return value is not None and compare(value, operator, threshold)

        parts.append(condition)
    timer = spec.get("timer")
    if timer is not None:
        if not isinstance(timer, Mapping):
            raise TriggerError(f"{field}.timer: expected a mapping")
        start, end = _hhmm(timer.get("start")), _hhmm(timer.get("end"))

        def in_window(_stats: Mapping[str, Any]) -> bool:
            v = now().strftime("%H:%M")
            if start > end:
                return start <= v or v <= end
            return start <= v <= end

        parts.append(in_window)
    return lambda stats: all(p(stats) for p in parts)
