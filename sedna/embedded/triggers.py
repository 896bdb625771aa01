"""Sedna's LC trigger language (`trigger.condition`, `trigger.timer`), as Sedna's LC reads it.

The simulated LC must decide exactly what Sedna's LC (`pkg/localcontroller/trigger`)
decides, or the embedded demo shows cycles a real edge node would never run. A trigger
is the AND of an optional timer range (local "HH:MM" strings compared as text, ranges
may wrap past midnight) and a binary condition on one metric, `metric` or `metric[i]`,
with operators `>`/`gt`, `>=`/`ge`, `=`/`==`/`eq`, `!=`/`ne`, `<=`/`le`, `<`/`lt` and
equality within 1e-6. Sedna's LC behaviour that surprises, kept here on purpose:

- The condition is always there: Sedna's `Trigger` type holds it as a value, so a spec
  without one reaches the LC as an empty metric, which no stats hold: such a trigger
  never fires (a job without a train condition never trains).
- A metric's value counts only as a number or a numeric string. Anything else, a list
  included, reads as 0: `precision_delta` (the eval results make it a list) is 0, so a
  deploy trigger `precision_delta > 0.1` never fires. Name an element,
  `precision_delta[0]`.
- A negative index or a `[` without a closing `]` makes Sedna's LC panic; here the
  evaluation raises `TriggerPanic` and the LC leaves the job waiting, which is what an
  edge node whose LC restarts and panics again shows.
- A timer bound that is not a string (or a threshold that is not a number) makes the
  whole job undecodable for Sedna's LC: `TriggerError` at build time.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

_EPS = 1e-6
_ATOI = re.compile(r"[+-]?[0-9]+")
_INT64 = 2**63
_MISSING = object()
_INF_WORDS = ("inf", "+inf", "-inf", "infinity", "+infinity", "-infinity")


class TriggerError(ValueError):
    """A trigger Sedna's LC cannot decode; the message names the field."""


class TriggerPanic(TriggerError):
    """A metric on which Sedna's LC panics when it evaluates the trigger."""


def parse_float(text: str) -> float | None:
    """Go's strconv.ParseFloat(text, 64): None where Go returns an error."""
    if not text or text != text.strip() or "_" in text:
        return None
    body = text.lstrip("+-")
    if body[:2].lower() == "0x":
        if "p" not in body.lower():  # Go wants the binary exponent of a hex float
            return None
        try:
            return float.fromhex(text)
        except (ValueError, OverflowError):
            return None
    try:
        value = float(text)
    except ValueError:
        return None
    if math.isinf(value) and text.lower() not in _INF_WORDS:
        return None  # out of range: Go's ErrRange
    return value


def go_number(value: Any) -> float | None:
    """Sedna's convertFloat: numbers and numeric strings; any other value is 0, not an error."""
    if isinstance(value, bool):
        return 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return parse_float(value)
    return 0.0


def metric_value(metric: str, stats: Mapping[str, Any]) -> float | None:
    """The value of `metric` or `metric[i]` in `stats`; None where Sedna's trigger says no.

    Raises TriggerPanic where Sedna's LC panics (negative index, no closing bracket).
    """
    left = metric.find("[")
    if left == -1:
        if metric not in stats:
            return None
        return go_number(stats[metric])
    top = stats.get(metric[:left].strip(), _MISSING)
    if top is _MISSING:
        return None
    right = metric.rfind("]")
    if right < left + 1:
        raise TriggerPanic(f"metric {metric!r}: no closing ']' (Sedna's LC panics on it)")
    sub = metric[left + 1 : right]
    if not _ATOI.fullmatch(sub) or not -_INT64 <= int(sub) < _INT64:
        return None
    idx = int(sub)
    if not isinstance(top, list | tuple):
        return None
    if idx >= len(top):
        return None
    if idx < 0:
        raise TriggerPanic(f"metric {metric!r}: negative index (Sedna's LC panics on it)")
    return go_number(top[idx])


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


def _string(spec: Mapping[str, Any], key: str, field: str) -> str:
    value = spec.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TriggerError(f"{field}.{key}: expected a string, got {value!r}")
    return value


def build_trigger(
    spec: Mapping[str, Any] | None, *, field: str, now: Callable[[], datetime] = datetime.now
) -> Trigger:
    """A predicate over the stats dict, as Sedna's LC builds it from a job's trigger spec."""
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        raise TriggerError(f"{field}: expected a mapping")
    cond = spec.get("condition")
    if cond is None:
        cond = {}
    if not isinstance(cond, Mapping):
        raise TriggerError(f"{field}.condition: expected a mapping")
    raw = cond.get("threshold", 0)
    if raw is None:
        raw = 0
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise TriggerError(f"{field}.condition.threshold: expected a number, got {raw!r}")
    threshold = float(raw)
    operator = _string(cond, "operator", f"{field}.condition")
    metric = _string(cond, "metric", f"{field}.condition")

    def condition(stats: Mapping[str, Any]) -> bool:
        value = metric_value(metric, stats)
        return value is not None and compare(value, operator, threshold)

    parts: list[Trigger] = []
    timer = spec.get("timer")
    if timer is not None:
        if not isinstance(timer, Mapping):
            raise TriggerError(f"{field}.timer: expected a mapping")
        start = _string(timer, "start", f"{field}.timer")
        end = _string(timer, "end", f"{field}.timer")

        def in_window(_stats: Mapping[str, Any]) -> bool:
            v = now().strftime("%H:%M")
            if start > end:
                return start <= v or v <= end
            return start <= v <= end

        parts.append(in_window)
    parts.append(condition)
    return lambda stats: all(p(stats) for p in parts)
