"""Condition data, model matching and URLs read as Sedna's LC reads them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sedna.embedded.lc_conditions import (
    LCPanic,
    UnsupportedURL,
    cond_models,
    deploy_stats,
    eval_result,
    pick_model,
    url_is_local,
)


def _cond(stage: str, ctype: str, data: Any) -> dict[str, Any]:
    raw = data if isinstance(data, str) else json.dumps(data)
    return {"stage": stage, "type": ctype, "data": raw}


PB = {"format": "pb", "url": "/o/model.pb"}
CKPT = {"format": "ckpt", "url": "/o/model.ckpt"}


@pytest.mark.parametrize(
    ("models", "want", "expected"),
    [
        ([CKPT, PB], {"format": "pb"}, PB),
        ([CKPT], {"format": "pb"}, None),  # Sedna panics on the nil it returns
        ([], {"format": "pb"}, None),
        (None, {"format": "pb"}, None),
        # One device: it must be one of the wanted ones; none or several: format alone.
        (
            [
                {**PB, "device_soc_versions": ["a"]},
                {**PB, "url": "b", "device_soc_versions": ["b"]},
            ],
            {"format": "pb", "device_soc_versions": ["b", "c"]},
            {**PB, "url": "b", "device_soc_versions": ["b"]},
        ),
        (
            [{**PB, "device_soc_versions": ["x", "y"]}],
            {"format": "pb", "device_soc_versions": ["b"]},
            {**PB, "device_soc_versions": ["x", "y"]},
        ),
        (
            [{**PB, "device_soc_versions": ["a"]}],
            {"format": "pb"},
            {**PB, "device_soc_versions": ["a"]},
        ),
        ([{"url": "/o/m"}], {"format": ""}, {"url": "/o/m"}),  # both formats empty
    ],
)
def test_pick_model(models: Any, want: dict[str, Any], expected: Any) -> None:
    assert pick_model(models, want) == expected


def test_cond_models_takes_the_latest_decodable_condition_with_the_part() -> None:
    conds = [
        _cond("Train", "Completed", {"output": {"models": [CKPT]}}),
        _cond("Train", "Completed", {"output": {"models": [PB]}}),
        _cond("Train", "Completed", "{not json"),  # skipped
        _cond("Train", "Completed", {"output": {"models": "pb"}}),  # does not decode: skipped
        _cond("Train", "Completed", {"output": {"models": [{"format": 1}]}}),  # ditto
        _cond("Train", "Completed", {"input": {"models": [CKPT]}}),  # no output: skipped
        _cond("Eval", "Completed", {"output": {"models": [CKPT]}}),  # another stage
    ]
    assert cond_models(conds, "Train", "Completed", "output") == [PB]
    assert cond_models(conds, "Train", "Ready", "output") is None


def test_cond_models_answers_from_the_latest_even_when_it_is_empty() -> None:
    conds = [
        _cond("Train", "Completed", {"output": {"models": [PB]}}),
        _cond("Train", "Completed", {"output": {"model": PB}}),  # Sedna reads only `models`
    ]
    assert cond_models(conds, "Train", "Completed", "output") == []


def _evaluated(new: Any, old: Any) -> list[dict[str, Any]]:
    output = {"models": [{**PB, "metrics": new}, {**PB, "metrics": old}]}
    return [_cond("Eval", "Completed", {"output": output})]


def test_eval_result_reads_lists_of_numbers() -> None:
    conds = _evaluated({"precision": [0.79, None]}, None)
    assert eval_result(conds) == [{"precision": [0.79, 0.0]}, {}]


@pytest.mark.parametrize(
    "bad", [{"precision": 0.79}, {"precision": ["0.79"]}, {"precision": [True]}, {"p": {"a": 1}}]
)
def test_eval_result_that_does_not_decode_is_none(bad: dict[str, Any]) -> None:
    # Go's Unmarshal into map[string][]float64 fails: "isn't need to deploy model".
    assert eval_result(_evaluated(bad, {"precision": [0.5]})) is None


def test_deploy_stats_are_the_metrics_and_their_deltas() -> None:
    stats = deploy_stats({"precision": [0.79], "recall": []}, {"precision": [0.62, 0.1]})
    assert stats["precision"] == [0.79]
    assert stats["precision_delta"] == [pytest.approx(0.17)]
    assert stats["recall_delta"] == []


@pytest.mark.parametrize("old", [{}, {"precision": []}, {"recall": [0.5]}])
def test_deploy_stats_panic_where_sedna_indexes_past_the_old_list(old: Any) -> None:
    with pytest.raises(LCPanic, match="precision"):
        deploy_stats({"precision": [0.79]}, old)


@pytest.mark.parametrize(
    ("url", "local"),
    [("/models/m.pb", True), ("models/m.pb", True), ("s3://bucket/m.pb", False),
     ("S3://bucket/m.pb", False)],
)  # fmt: skip
def test_url_is_local(url: str, local: bool) -> None:
    assert url_is_local(url) is local


@pytest.mark.parametrize(
    "url", ["", "http://host/m.pb", "https://h/m", "file:///m.pb", "http://[::1"]
)
def test_urls_sedna_storage_refuses(url: str) -> None:
    with pytest.raises(UnsupportedURL):
        url_is_local(url)
