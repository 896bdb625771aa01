"""The plugin's pure parts: options, condition history, downstream rules, reports."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sedna_incremental_learning.plugin as il_plugin
from sedna_incremental_learning import conditions as C
from sedna_incremental_learning.downstream import Lookups, plan
from sedna_incremental_learning.upstream import ReportError, condition_from_report

from sedna.plugins import PluginError
from sedna.plugins.loader import load_plugins
from sedna.runtime import FeatureOptionsError, GMConfig

from .helpers import sample_dataset, sample_job, sample_model

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_options_defaults_and_errors_name_the_key() -> None:
    opts = il_plugin.validate_options({})
    assert (opts.maxConditions, opts.failureBackoffSeconds, opts.failureBackoffMaxSeconds) == (
        50, 10.0, 360.0,
    )  # fmt: skip
    with pytest.raises(FeatureOptionsError) as err:
        il_plugin.validate_options({"maxConditions": 2})
    assert err.value.key == "maxConditions"
    with pytest.raises(FeatureOptionsError) as err:
        il_plugin.validate_options({"maxCondition": 10})
    assert err.value.key == "maxCondition" and "unknown option" in err.value.reason
    with pytest.raises(FeatureOptionsError) as err:
        il_plugin.validate_options({"failureBackoffSeconds": 60, "failureBackoffMaxSeconds": 30})
    assert err.value.key == "failureBackoffMaxSeconds"


def test_gm_yaml_option_error_names_the_path() -> None:
    cfg = GMConfig.model_validate({"features": {"incremental_learning": {"maxConditions": "many"}}})
    with pytest.raises(PluginError, match=r"features\.incremental_learning\.maxConditions"):
        load_plugins(cfg, extra_plugins={"incremental_learning": il_plugin})


def _cond(stage: str, type_: str, data: str = "") -> dict[str, Any]:
    return C.new_condition(type_, stage, NOW, data=data)


def test_trim_keeps_newest_and_latest_of_each_stage() -> None:
    history = [_cond("Train", "Completed", data='{"output":{}}')]
    history += [_cond("Eval", "Waiting")]
    history += [_cond("Deploy", "Completed")]
    history += [_cond("Train", t) for t in ("Waiting", "Ready", "Starting", "Failed") * 5]
    trimmed = C.trim(history, 6)
    assert len(trimmed) == 6
    assert trimmed[:3] == history[:3]  # the latest of Eval and Deploy, the LC's output
    assert trimmed[3:] == history[-3:]
    assert C.trim(history[:4], 6) == history[:4]


def test_consecutive_failures_count_from_the_last_deploy() -> None:
    hist = [_cond("Deploy", "Completed"), _cond("Train", "Failed"), _cond("Train", "Completed")]
    hist += [_cond("Eval", "Failed")]
    assert C.consecutive_failures(hist) == 2
    assert C.consecutive_failures(hist[:1]) == 0


def test_report_becomes_condition_with_go_marshalled_data() -> None:
    cond = condition_from_report(
        {
            "phase": "Train",
            "status": "Completed",
            "input": {"models": [{"format": "pb", "url": "/a", "x": 1}], "dataURL": "/d"},
            "output": {"models": [{"format": "pb", "url": "/b"}], "ownerInfo": {"k": 1}},
            "extra": True,
        },
        NOW,
    )
    assert (cond["stage"], cond["type"], cond["status"]) == ("Train", "Completed", "True")
    assert cond["message"] == "reported by lc"
    assert cond["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert cond["data"] == (
        '{"input":{"models":[{"format":"pb","url":"/a","classes":null}],"dataURL":"/d"},'
        '"output":{"models":[{"format":"pb","url":"/b","classes":null}]}}'
    )
    with pytest.raises(ReportError) as err:
        condition_from_report({"phase": "train", "status": 1}, NOW)
    assert err.value.field == "status"


def _lookups(ref: Path) -> Lookups:
    ds = sample_dataset(ref)
    models = {n: sample_model(ref, n) for n in ("initial-model", "deploy-model")}
    return Lookups(
        dataset=lambda ns, name: ds if name == ds["metadata"]["name"] else None,
        model=lambda ns, name: models.get(name),
        secret=lambda ns, name: None,
        warn=lambda text: None,
    )


def _job(ref: Path, stage: str, type_: str, **annotations: str) -> dict[str, Any]:
    job = sample_job(ref)
    job["metadata"]["namespace"] = "ns"
    job["metadata"]["annotations"] = {f"sedna.io/{k}": v for k, v in annotations.items()}
    job["status"] = {"conditions": [_cond(stage, type_)]}
    return job


def _sent(msgs: list[Any]) -> list[tuple[str, str, str, str]]:
    return [(m.node, m.operation, m.kind, m.name) for m in msgs]


def test_downstream_rules(sample_dir: Path) -> None:
    lk = _lookups(sample_dir)
    job = "helmet-detection-demo"
    assert _sent(plan("insert", _job(sample_dir, "Train", "Waiting"), lk)) == [
        ("edge0", "insert", "Model", "initial-model"),
        ("edge0", "insert", "IncrementalLearningJob", job),
    ]
    running = _job(sample_dir, "Eval", "Running", Train="n1", Eval="n2")
    assert _sent(plan("insert", running, lk)) == [
        ("n1", "delete", "IncrementalLearningJob", job),
        ("n2", "insert", "IncrementalLearningJob", job),
    ]
    deploy_waiting = _job(sample_dir, "Deploy", "Waiting", Eval="n2")
    assert _sent(plan("insert", deploy_waiting, lk)) == [
        ("n2", "insert", "Model", "deploy-model"),
        ("n2", "insert", "IncrementalLearningJob", job),
    ]
    done = _job(sample_dir, "Train", "Completed", Train="n1")
    assert _sent(plan("insert", done, lk)) == [("n1", "delete", "IncrementalLearningJob", job)]
    # no stage node known yet: nothing is sent to node ""
    assert _sent(plan("insert", _job(sample_dir, "Train", "Running"), lk)) == []
    deleted = _job(sample_dir, "Eval", "Running", Train="n1", Eval="n1")
    assert _sent(plan("delete", deleted, lk)) == [
        ("edge0", "delete", "IncrementalLearningJob", job),
        ("n1", "delete", "IncrementalLearningJob", job),
    ]
    sent = plan("insert", _job(sample_dir, "Train", "Waiting"), lk)[1].obj
    assert sent["kind"] == "IncrementalLearningJob"
    assert json.dumps(sent)  # plain JSON


def test_downstream_credentials_leave_the_cached_objects_alone(sample_dir: Path) -> None:
    """plan() copies only what it changes: the inputs are the informers' shared objects."""
    job = _job(sample_dir, "Train", "Waiting")
    job["spec"]["credentialName"] = "s3-creds"
    model = sample_model(sample_dir, "initial-model")
    model["metadata"]["annotations"] = {"keep": "me"}
    model["spec"]["credentialName"] = "s3-creds"
    secret = {"metadata": {"annotations": {"s3-endpoint": "s3.example"}}, "stringData": {"k": "v"}}
    lk = Lookups(
        dataset=_lookups(sample_dir).dataset,
        model=lambda ns, name: model if name == "initial-model" else None,
        secret=lambda ns, name: secret,
        warn=lambda text: None,
    )
    before = copy.deepcopy((job, model, secret))
    sent_model, sent_job = (m.obj for m in plan("insert", job, lk))
    assert (job, model, secret) == before
    expected = '{"k":"v","s3-endpoint":"s3.example"}'
    assert sent_job["metadata"]["annotations"]["sedna.io/credential"] == expected
    assert sent_model["metadata"]["annotations"] == {"keep": "me", "sedna.io/credential": expected}
    assert (sent_job["kind"], sent_model["kind"]) == ("IncrementalLearningJob", "Model")
