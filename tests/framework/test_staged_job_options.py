"""One options model and one error wording for every staged-job feature."""

from __future__ import annotations

import pytest
import sedna_incremental_learning.plugin as il_plugin
import sedna_lifelong_learning.plugin as ll_plugin
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sedna.runtime import FeatureOptionsError, StagedJobOptions, StageOptions


def test_both_staged_features_take_the_runtime_options() -> None:
    assert il_plugin.Options is StagedJobOptions
    assert ll_plugin.Options is StagedJobOptions
    for plugin in (il_plugin, ll_plugin):
        opts = plugin.validate_options({"maxConditions": 7, "failureBackoffSeconds": 2})
        assert opts.stage_options() == StageOptions(
            max_conditions=7, failure_backoff_seconds=2.0, failure_backoff_max_seconds=360.0
        )


@pytest.mark.parametrize(
    ("raw", "key", "reason"),
    [
        (
            {"maxConditions": 5},
            "maxConditions",
            "Input should be greater than or equal to 6, got 5",
        ),
        ({"maxConditions": "many"}, "maxConditions", 'expected an integer, got "many"'),
        ({"failureBackoffSeconds": 0}, "failureBackoffSeconds", "greater than 0, got 0"),
        ({"maxCondition": 10}, "maxCondition", "unknown option"),
        (
            {"failureBackoffSeconds": 60, "failureBackoffMaxSeconds": 30},
            "failureBackoffMaxSeconds",
            "must not be below failureBackoffSeconds",
        ),
    ],
)
def test_a_bad_option_names_its_key(raw: dict[str, object], key: str, reason: str) -> None:
    with pytest.raises(FeatureOptionsError) as err:
        StagedJobOptions.from_section(raw)
    assert err.value.key == key
    assert reason in err.value.reason
    assert str(err.value) == f"{key}: {err.value.reason}"


def test_a_nested_option_error_names_the_whole_path() -> None:
    class Inner(BaseModel):
        model_config = ConfigDict(extra="forbid")
        port: int = Field(ge=1)

    class Outer(BaseModel):
        model_config = ConfigDict(extra="forbid")
        server: Inner

    with pytest.raises(ValidationError) as exc:
        Outer.model_validate({"server": {"port": 0}})
    error = FeatureOptionsError.from_validation(exc.value)
    assert (error.key, error.reason) == (
        "server.port",
        "Input should be greater than or equal to 1, got 0",
    )
    with pytest.raises(ValidationError) as exc:
        Outer.model_validate({"server": {"port": 1, "host": "x"}})
    assert str(FeatureOptionsError.from_validation(exc.value)) == "server.host: unknown option"


def test_an_empty_section_is_the_defaults() -> None:
    assert StagedJobOptions.from_section(None) == StagedJobOptions()
    assert StagedJobOptions().stage_options() == StageOptions()
