"""The staged kinds' shared spec checks: a stage's trigger and its pod template."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from sedna.runtime import ObjectSpecError, SpecView, StageTrigger, TemplatedView, parse_view

# Sedna's LC trigger (pkg/localcontroller/trigger/trigger.go, BinaryTrigger.Trigger)
SEDNA_OPERATORS = {"gt", ">", "ge", ">=", "eq", "=", "==", "ne", "!=", "le", "<=", "lt", "<"}


class _Stage(SpecView):
    trigger: StageTrigger


def _trigger(**changes: Any) -> dict[str, Any]:
    trigger: dict[str, Any] = {
        "checkPeriodSeconds": 60,
        "timer": {"start": "02:00", "end": "24:00"},
        "condition": {"operator": ">", "threshold": 500, "metric": "num_of_samples"},
    }
    for path, value in changes.items():
        cur = trigger
        *parents, last = path.split("__")
        for p in parents:
            cur = cur[p]
        if value is None:
            del cur[last]
        else:
            cur[last] = value
    return trigger


def _problem(data: object, model: type[SpecView] = _Stage) -> tuple[str, str]:
    with pytest.raises(ObjectSpecError) as err:
        parse_view(model, data, "Job ns/j", "spec.trainSpec")
    return err.value.field, err.value.reason


@pytest.mark.parametrize("operator", sorted(SEDNA_OPERATORS))
def test_every_operator_sedna_knows_is_accepted(operator: str) -> None:
    stage = parse_view(_Stage, {"trigger": _trigger(condition__operator=operator)}, "j", "s")
    assert stage.trigger.condition.operator == operator


@pytest.mark.parametrize("operator", ["~", "", ">>", "GT", "more than"])
def test_an_unknown_operator_names_the_field_and_the_supported_ones(operator: str) -> None:
    field, reason = _problem({"trigger": _trigger(condition__operator=operator)})
    assert field == "spec.trainSpec.trigger.condition.operator"
    assert reason.startswith(f'unsupported operator "{operator}" (supported: >, <, =, >=, <=, !=')
    listed = reason.split("(supported: ")[1].rstrip(")").split(", ")
    assert set(listed) == SEDNA_OPERATORS


@pytest.mark.parametrize(
    ("start", "end"),
    [("00:00", "23:59"), ("02:00", "24:00"), ("23:00", "01:00"), (120, 1440), (0, 0)],
)
def test_timer_bounds_of_a_day_are_accepted(start: object, end: object) -> None:
    stage = parse_view(_Stage, {"trigger": _trigger(timer__start=start, timer__end=end)}, "j", "s")
    assert stage.trigger.timer is not None
    assert len(stage.trigger.timer.start) == 5 and len(stage.trigger.timer.end) == 5


@pytest.mark.parametrize(
    ("bound", "value"),
    [
        ("start", "25:99"),
        ("start", "24:00"),  # the start of no day: only an end may be 24:00
        ("start", "9:00"),  # the LC compares text: "9:00" sorts after "10:00"
        ("start", 1440),
        ("end", "24:01"),
        ("end", "12:60"),
        ("end", "noon"),
        ("end", 1441),
        ("end", True),
    ],
)
def test_a_timer_bound_outside_the_day_names_the_field(bound: str, value: object) -> None:
    field, reason = _problem({"trigger": _trigger(**{f"timer__{bound}": value})})
    assert field == f"spec.trainSpec.trigger.timer.{bound}"
    assert reason.startswith('expected a time of day "HH:MM"')


@pytest.mark.parametrize("period", [-5, -1])
def test_a_negative_check_period_names_the_field(period: int) -> None:
    field, reason = _problem({"trigger": _trigger(checkPeriodSeconds=period)})
    assert field == "spec.trainSpec.trigger.checkPeriodSeconds"
    assert reason.startswith("must be a positive number of seconds") and str(period) in reason


@pytest.mark.parametrize("period", [0, None])
def test_an_absent_or_zero_check_period_is_the_lcs_default(period: int | None) -> None:
    # Go marshals the trigger with omitempty: 0 reaches the LC as absent (default 60)
    stage = parse_view(_Stage, {"trigger": _trigger(checkPeriodSeconds=period)}, "j", "s")
    assert stage.trigger.checkPeriodSeconds == 0


def test_check_period_must_be_an_integer() -> None:
    field, _ = _problem({"trigger": _trigger(checkPeriodSeconds="60")})
    assert field == "spec.trainSpec.trigger.checkPeriodSeconds"


def _template(**container: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "train-worker", "image": "i", **container}]}}


@pytest.mark.parametrize("name", ["Bad_Name", "UPPER", "a.b", "-lead", "x" * 64, ""])
def test_a_container_name_the_api_server_refuses_names_the_field(name: str) -> None:
    field, reason = _problem({"template": _template(name=name)}, TemplatedView)
    assert field == "spec.trainSpec.template.spec.containers[0].name"
    assert reason == f"{name!r} is not a lowercase RFC 1123 label"


def test_an_env_value_that_is_not_a_string_names_the_field() -> None:
    template = _template(env=[{"name": "epochs", "value": 1}])
    field, reason = _problem({"template": template}, TemplatedView)
    assert field == "spec.trainSpec.template.spec.containers[0].env[0].value"
    assert "must be a string" in reason


def test_the_structural_checks_come_first() -> None:
    field, reason = _problem({"template": {"spec": {"containers": []}}}, TemplatedView)
    assert field == "spec.trainSpec.template.spec.containers"
    assert reason == "the pod template needs at least one container"


@pytest.mark.parametrize(
    ("sample", "stages"),
    [
        ("incrementallearningjob_v1alpha1.yaml", ("trainSpec", "deploySpec")),
        ("lifelonglearningjobv1alpha1.yaml", ("trainSpec",)),
    ],
)
def test_sedna_samples_triggers_and_templates_pass(
    sample_dir: Path, sample: str, stages: tuple[str, ...]
) -> None:
    job = yaml.safe_load((sample_dir / sample).read_text())
    for stage in stages:
        parse_view(_Stage, job["spec"][stage], "j", f"spec.{stage}")
    for stage in ("trainSpec", "evalSpec", "deploySpec"):
        parse_view(TemplatedView, job["spec"][stage], "j", f"spec.{stage}")
