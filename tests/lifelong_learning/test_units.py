"""The plugin's pure parts: spec views, worker params, knowledge base, downstream, reports."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import sedna_lifelong_learning.plugin as ll_plugin
from sedna_lifelong_learning import knowledge_base
from sedna_lifelong_learning.downstream import Lookups, plan
from sedna_lifelong_learning.spec import CondData, SpecError, cond_data_from, job_spec
from sedna_lifelong_learning.upstream import ReportError, parse_report
from sedna_lifelong_learning.workers import (
    JobInfo,
    NamedDataset,
    cloud_kb_index,
    eval_param,
    inference_param,
    train_param,
)
from support.samples import load_sample

from sedna.runtime import DELETE, INSERT, FeatureOptionsError, MountURL, WorkerParam

JOB = "atcii-classifier-demo"
INFO = JobInfo("default", JOB, "http://localhost:9100", "http://localhost:9020")


def sample(ref: Path) -> dict[str, Any]:
    job = load_sample(ref, "lifelonglearningjobv1alpha1.yaml")
    job["metadata"]["namespace"] = "default"
    return job


def dataset(url: str = "/data/trainData.csv", credential: str = "") -> NamedDataset:
    from sedna_lifelong_learning.spec import dataset_spec

    obj = {"spec": {"url": url, "format": "csv", "nodeName": "edge-node"}}
    if credential:
        obj["spec"]["credentialName"] = credential
    return NamedDataset("lifelong-dataset", dataset_spec(obj))


def env(param: WorkerParam) -> dict[str, str]:
    return dict(param.env)


def mounts(param: WorkerParam) -> dict[str, list[MountURL]]:
    return {m.env_name: m.all_urls() for m in param.mounts}


# -- options and spec ------------------------------------------------------------------


def test_options_defaults_and_errors_name_the_key() -> None:
    opts = ll_plugin.validate_options({})
    assert (opts.maxConditions, opts.failureBackoffSeconds) == (50, 10.0)
    with pytest.raises(FeatureOptionsError) as err:
        ll_plugin.validate_options({"maxCondition": 10})
    assert err.value.key == "maxCondition" and "unknown option" in err.value.reason


def test_sedna_sample_is_accepted(sample_dir: Path) -> None:
    spec = job_spec(sample(sample_dir))
    assert spec.dataset.name == "lifelong-dataset" and spec.dataset.trainProb == 0.8
    assert spec.outputDir == "/output"
    trigger = spec.trainSpec.trigger
    assert (trigger.condition.operator, trigger.condition.threshold) == (">", 500)
    # the sample's unquoted `end: 24:00` is 1440 to a YAML 1.1 loader (base 60)
    assert trigger.timer is not None and (trigger.timer.start, trigger.timer.end) == (
        "02:00",
        "24:00",
    )


def _set(job: dict[str, Any], path: str, value: Any) -> None:
    cur = job["spec"]
    *parents, last = path.split(".")
    for p in parents:
        cur = cur[p]
    if value is _DELETE:
        del cur[last]
    else:
        cur[last] = value


_DELETE = object()


@pytest.mark.parametrize(
    ("path", "value", "field", "reason"),
    [
        ("dataset.name", _DELETE, "spec.dataset.name", "required field is missing"),
        ("outputDir", _DELETE, "spec.outputDir", "required field is missing"),
        ("trainSpec.trigger", _DELETE, "spec.trainSpec.trigger", "required field is missing"),
        (
            "trainSpec.trigger.condition.operator",
            "bigger",
            "spec.trainSpec.trigger.condition.operator",
            'unsupported operator "bigger" (supported: >, <, =, >=, <=, !=, ==, gt, lt,',
        ),
        (
            "trainSpec.trigger.timer.start",
            "noon",
            "spec.trainSpec.trigger.timer.start",
            'expected a time of day "HH:MM"',
        ),
        (
            "evalSpec.template",
            {"spec": {"containers": []}},
            "spec.evalSpec.template.spec.containers",
            "the pod template needs at least one container",
        ),
        ("dataset.trainProb", 2, "spec.dataset.trainProb", "less than or equal to 1"),
        ("dataset.trainProb", _DELETE, "spec.dataset.trainProb", "required field is missing"),
    ],
)
def test_bad_spec_names_the_field(
    sample_dir: Path, path: str, value: Any, field: str, reason: str
) -> None:
    job = sample(sample_dir)
    _set(job, path, value)
    with pytest.raises(SpecError) as err:
        job_spec(job)
    assert err.value.field == field
    assert reason in err.value.reason


# -- worker params (Sedna's createPod / createInferPod) ---------------------------------


def _data(input_: dict[str, Any]) -> CondData:
    return cond_data_from({"input": input_}, "test", "data")


TRAIN_INPUT = {"dataURL": "/output/data/train/1/data.txt", "outputDir": "/output/train/1"}


def test_train_param_first_round(sample_dir: Path) -> None:
    spec = job_spec(sample(sample_dir))
    param = train_param(INFO, spec, _data(TRAIN_INPUT), dataset(), [], "d", suffix=lambda: "abcde")
    assert env(param) == {
        "NAMESPACE": "default",
        "JOB_NAME": JOB,
        "WORKER_NAME": "train-worker-abcde",
        "HAS_COMPLETED_INITIAL_TRAINING": "false",
        "LC_SERVER": "http://localhost:9100",
        "KB_SERVER": "http://localhost:9020",
    }
    m = mounts(param)
    assert list(m) == ["OUTPUT_URL", "TRAIN_DATASET_URL", "ORIGINAL_DATASET_URL"]
    assert m["OUTPUT_URL"][0].url == "/output/train/1"
    assert not m["OUTPUT_URL"][0].download_by_initializer
    assert m["TRAIN_DATASET_URL"][0].download_by_initializer
    original = m["ORIGINAL_DATASET_URL"][0]
    assert (original.url, original.indirect) == ("/data/trainData.csv", False)
    assert (param.worker_type, param.restart_policy) == ("train", "OnFailure")
    assert param.host_network and param.dns_policy == "ClusterFirstWithHostNet"


def test_train_param_after_initial_training_names_the_cloud_kb_index(
    sample_dir: Path,
) -> None:
    spec = job_spec(sample(sample_dir))
    out = {"output": {"models": [{"format": "pkl", "url": "s3://kb/train/1/index.pkl"}]}}
    history = [
        {"stage": "Train", "type": "Completed", "data": json.dumps(out)},
        {"stage": "Train", "type": "Completed"},  # the GM's own, no data
        {"stage": "Eval", "type": "Waiting"},
    ]
    param = train_param(INFO, spec, _data(TRAIN_INPUT), dataset(), history, "d")
    assert env(param)["HAS_COMPLETED_INITIAL_TRAINING"] == "true"
    assert env(param)["CLOUD_KB_INDEX"] == "s3://kb/train/1/index.pkl"
    assert cloud_kb_index([{"stage": "Train", "type": "Completed", "data": "{bad"}]) == ""


def test_train_param_with_a_data_index_downloads_it_entry_by_entry(
    sample_dir: Path,
) -> None:
    spec = job_spec(sample(sample_dir))
    data = _data({**TRAIN_INPUT, "dataIndexURL": "s3://out/data/train/1/dataIndex.txt"})
    original = mounts(train_param(INFO, spec, data, dataset(), [], "d"))["ORIGINAL_DATASET_URL"]
    assert (original[0].url, original[0].indirect) == ("s3://out/data/train/1/dataIndex.txt", True)


def test_eval_param(sample_dir: Path) -> None:
    job = sample(sample_dir)
    job["spec"]["credentialName"] = "job-secret"
    spec = job_spec(job)
    data = _data(
        {
            "models": [{"format": "pkl", "url": "/output/train/1/index.pkl"}],
            "dataURL": "/output/data/eval/1/data.txt",
            "outputDir": "/output/eval/1",
        }
    )
    param = eval_param(INFO, spec, data, dataset(credential="ds-secret"), "d", lambda: "xyzzy")
    assert env(param) == {
        "NAMESPACE": "default",
        "JOB_NAME": JOB,
        "WORKER_NAME": "eval-worker-xyzzy",
        "LC_SERVER": "http://localhost:9100",
        "KB_SERVER": "http://localhost:9020",
    }
    m = mounts(param)
    assert list(m) == ["MODEL_URLS", "OUTPUT_URL", "TEST_DATASET_URL", "ORIGINAL_DATASET_URL"]
    assert [u.secret_name for u in m["MODEL_URLS"]] == ["job-secret"]
    assert m["TEST_DATASET_URL"][0].secret_name == "ds-secret"
    assert m["OUTPUT_URL"][0].secret_name == "job-secret"
    assert param.dns_policy == "ClusterFirstWithHostNet" and param.restart_policy == "OnFailure"


def test_inference_param(sample_dir: Path) -> None:
    spec = job_spec(sample(sample_dir))
    param = inference_param(INFO, spec, suffix=lambda: "qqqqq")
    assert env(param) == {
        "NAMESPACE": "default",
        "JOB_NAME": JOB,
        "WORKER_NAME": "inferworker-qqqqq",
        "LC_SERVER": "http://localhost:9100",
        "OUTPUT_URL": "/output",
    }
    (models,) = mounts(param)["MODEL_URLS"]
    assert (models.url, models.download_by_initializer) == ("/output/deploy/index.pkl", False)
    assert (param.worker_type, param.restart_policy) == ("inference", "")
    assert param.host_network and param.dns_policy == "ClusterFirstWithHostNet"


# -- knowledge base (Sedna's updateStatusKnowledgeBase) ----------------------------------


KB_OUTPUT = {
    "models": [
        {
            "format": "pkl",
            "url": "/output/train/2/index.pkl",
            "classes": ["cooler", "warmer"],
            "current_metric": {"task-2": {"precision_score": 0.83}, "task-1": {"f1": 0.7}},
            "number_of_labeled_unseen_sample": 120,
        },
        {"format": "pkl", "url": "/x", "number_of_labeled_unseen_sample": 5},
    ],
    "ownerInfo": {"dropped": True},
}


def test_knowledge_base_from_output_models() -> None:
    kb = knowledge_base.from_report(cond_data_from({"output": KB_OUTPUT}, "r", "content"))
    assert kb == {
        "AIModels": {
            "numberOfAIModels": 2,
            "listOfAIModels": [
                {"modelID": "task-1", "averagePrecision": 0.7, "numberOfTrainSamples": 120},
                {"modelID": "task-2", "averagePrecision": 0.83, "numberOfTrainSamples": 120},
            ],
        },
        "AIClasses": {"numberOfAIClasses": 2, "listOfAIClasses": ["cooler", "warmer"]},
        "samples": {"numberOfLabeledUnseenSample": 125, "numberOfUnseenSample": 0},
    }
    assert knowledge_base.from_report(cond_data_from({"output": {}}, "r", "content")) is None
    assert knowledge_base.from_report(CondData()) is None


def test_float32_marshals_as_go_does() -> None:
    assert knowledge_base.float32(0.83) == 0.83
    assert knowledge_base.float32(0.1 + 0.2) == 0.3  # float32 has 7 digits


# -- reports (Sedna's updateFromEdge) --------------------------------------------------


def test_report_becomes_condition_data_and_knowledge_base() -> None:
    report = parse_report({"phase": "Train", "status": "completed", "output": KB_OUTPUT})
    assert (report.stage, report.type) == ("Train", "Completed")
    data = json.loads(report.data)
    assert "ownerInfo" not in data["output"]
    assert data["output"]["models"][0]["current_metric"]["task-2"] == {"precision_score": 0.83}
    assert report.knowledge_base is not None
    ready = parse_report({"phase": "train", "status": "ready", "input": TRAIN_INPUT})
    assert json.loads(ready.data) == {"input": TRAIN_INPUT}
    assert ready.knowledge_base is None


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ({"status": "ready"}, "phase"),
        ({"phase": "test", "status": "ready"}, "phase"),
        ({"phase": "train", "status": 3}, "status"),
        ({"phase": "train", "status": "ready", "input": {"dataURL": 5}}, "input.dataURL"),
        (
            {"phase": "eval", "status": "completed", "output": {"models": [{"url": []}]}},
            "output.models.0.url",
        ),
        ([1, 2], "content"),
    ],
)
def test_bad_report_names_the_field(content: Any, field: str) -> None:
    with pytest.raises(ReportError) as err:
        parse_report(content)
    assert err.value.field == field


# -- downstream (Sedna's syncToEdge) ---------------------------------------------------


def _lookups(node: str = "edge0", warnings: list[str] | None = None) -> Lookups:
    ds = {"spec": {"url": "/d", "nodeName": node}} if node else None
    secrets = {"job-secret": {"metadata": {"name": "job-secret"}, "data": {}}}
    return Lookups(
        dataset=lambda ns, name: ds,
        secret=lambda ns, name: secrets.get(name),
        warn=(warnings if warnings is not None else []).append,
    )


def _with(job: dict[str, Any], state: str, **annotations: str) -> dict[str, Any]:
    out = copy.deepcopy(job)
    stage, type_ = state.split("/")
    out["status"] = {"conditions": [{"stage": stage, "type": type_}]}
    out["metadata"]["annotations"] = {f"sedna.io/{k}": v for k, v in annotations.items()}
    return out


def _routes(messages: list[Any]) -> list[tuple[str, str]]:
    return [(m.node, m.operation) for m in messages]


@pytest.mark.parametrize(
    ("state", "annotations", "routes"),
    [
        ("Train/Waiting", {}, [("edge0", INSERT)]),
        ("Train/Ready", {}, []),
        ("Train/Starting", {}, []),
        ("Train/Running", {"Train": "gpu"}, [("gpu", INSERT)]),
        ("Train/Running", {}, []),  # not placed yet: no message for node ""
        ("Train/Completed", {"Train": "gpu"}, [("gpu", DELETE)]),
        ("Train/Completed", {"Train": "edge0"}, []),  # the dataset node keeps the job
        ("Eval/Failed", {"Eval": "gpu"}, [("gpu", DELETE)]),
        ("Eval/Waiting", {"Train": "gpu"}, [("edge0", INSERT)]),
        ("Deploy/Completed", {"Eval": "gpu"}, []),
    ],
)
def test_downstream_routes(
    sample_dir: Path, state: str, annotations: dict[str, str], routes: list[Any]
) -> None:
    job = _with(sample(sample_dir), state, **annotations)
    messages = plan(INSERT, job, _lookups())
    assert _routes(messages) == routes
    assert all(m.obj["kind"] == "LifelongLearningJob" for m in messages)  # never a Model


def test_downstream_delete_reaches_every_node_once(sample_dir: Path) -> None:
    job = _with(sample(sample_dir), "Eval/Running", Train="gpu", Eval="gpu", Deploy="edge0")
    assert _routes(plan(DELETE, job, _lookups())) == [("edge0", DELETE), ("gpu", DELETE)]


def test_downstream_without_dataset_node_or_conditions(sample_dir: Path) -> None:
    job = sample(sample_dir)
    assert plan(INSERT, job, _lookups()) == []
    assert plan(INSERT, _with(job, "Train/Waiting"), _lookups(node="")) == []


def test_downstream_attaches_the_credential_without_changing_the_job(
    sample_dir: Path,
) -> None:
    job = _with(sample(sample_dir), "Train/Waiting")
    job["spec"]["credentialName"] = "job-secret"
    before = copy.deepcopy(job)
    (msg,) = plan(INSERT, job, _lookups())
    assert "sedna.io/credential" in msg.obj["metadata"]["annotations"]
    assert job == before
    warnings: list[str] = []
    job["spec"]["credentialName"] = "missing"
    (msg,) = plan(INSERT, job, _lookups(warnings=warnings))
    assert warnings and "missing" in warnings[0]
