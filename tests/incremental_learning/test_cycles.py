"""Sedna's sample job through two full Train -> Eval -> Deploy cycles, as Sedna runs it.

After each step: the pods (env, mounts, policies), the conditions, the node
annotations and what each LC received.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import GMFactory, LCFactory
from .helpers import (
    DS_NODE,
    JOB,
    WORKER_NODE,
    Api,
    LogCapture,
    TestLC,
    env_of,
    mounts_of,
    start_sample_job,
    start_stage,
    volumes_of,
    wait_until,
)

KIND = "incrementallearningjob"
MODEL_URL = "/model/frozen.pb"  # both sample Models
DATASET_URL = "/code/data/train.txt"  # the sample Dataset


def _base_env(env: dict[str, Any], namespace: str, worker_prefix: str) -> None:
    assert env["NAMESPACE"] == namespace
    assert env["JOB_NAME"] == JOB
    assert env["WORKER_NAME"].startswith(worker_prefix)
    assert len(env["WORKER_NAME"]) == len(worker_prefix) + 5
    assert env["LC_SERVER"] == "http://localhost:9100"


def _train_stage(api: Api, ds_lc: TestLC, node_lc: TestLC, cycle: int) -> None:
    ns = api.ns
    ds_lc.wait_job_state("Train/Waiting")
    ds_lc.wait_for("model", "insert", "initial-model")
    index = f"/data/index/{cycle}.txt" if cycle == 2 else ""
    train_input: dict[str, Any] = {
        "models": [{"format": "ckpt", "url": MODEL_URL}],
        "dataURL": f"/data/train/{cycle}.txt",
        "outputDir": f"/output/train/{cycle}",
    }
    if index:
        train_input["dataIndexURL"] = index
    start_stage(api, ds_lc, "train", train_input)
    (pod,) = [p for p in api.live_pods("train") if p["status"].get("phase") != "Succeeded"]
    name = pod["metadata"]["name"]
    assert name.startswith(f"{JOB}-train-")
    assert pod["metadata"]["generateName"] == f"{JOB}-train-"
    ready, starting = api.conditions()[-2:]
    assert ready["message"] == "reported by lc"
    assert json.loads(ready["data"])["input"]["outputDir"] == f"/output/train/{cycle}"
    assert json.loads(starting["data"]) == {"pod": name}
    assert pod["spec"]["restartPolicy"] == "OnFailure"
    assert pod["spec"]["hostNetwork"] is True
    owner = pod["metadata"]["ownerReferences"][0]
    assert owner["kind"] == "IncrementalLearningJob" and owner["controller"] is True
    env = env_of(pod)
    _base_env(env, ns, "train-worker-")
    assert env["BASE_MODEL_URL"] == "/home/data" + MODEL_URL
    assert env["MODEL_URL"] == f"/home/data/output/train/{cycle}"
    assert env["TRAIN_DATASET_URL"] == f"/home/data/data/train/{cycle}.txt"
    # sample template env is kept, first
    assert next(iter(env)) == "batch_size"
    if index:
        # the LC's index is downloaded entry by entry (indirect)
        assert env["ORIGINAL_DATASET_URL"] == f"/downloads{index}"
        init = pod["spec"]["initContainers"][0]
        assert init["name"] == "storage-initializer"
        assert init["args"] == [f"/home/data{index}", "@/downloads/data/index/"]
    else:
        assert env["ORIGINAL_DATASET_URL"] == "/home/data" + DATASET_URL
    mounts = mounts_of(pod)
    assert "/home/data/model/" in mounts and "/home/data/output/train/" in mounts
    assert volumes_of(pod)[mounts["/home/data/model/"]]["hostPath"]["path"] == "/model/"

    api.set_phase_and_wait(name, "Running", "Train/Running")
    assert api.job()["metadata"]["annotations"]["sedna.io/Train"] == WORKER_NODE
    node_lc.wait_job_state("Train/Running")
    # the LC reports the trained model, then the worker exits
    trained = {"format": "ckpt", "url": f"/output/train/{cycle}/model.pb"}
    node_lc.report(ns, "train", "completed", input=train_input, output={"models": [trained]})
    api.wait_latest("Eval/Waiting")
    api.set_phase(name, "Succeeded")
    assert api.states()[-3:] == ["Train/Running", "Train/Completed", "Eval/Waiting"]
    completed = api.conditions()[-2]
    assert json.loads(completed["data"])["output"]["models"][0]["url"] == trained["url"]
    # Train Completed: the train node is not resident, its LC drops the job
    node_lc.wait_for(KIND, "delete", JOB)


def _eval_stage(api: Api, ds_lc: TestLC, node_lc: TestLC, cycle: int) -> None:
    ns = api.ns
    ds_lc.wait_job_state("Eval/Waiting")
    ds_lc.wait_for("model", "insert", "deploy-model")
    eval_input = {
        "models": [
            {"format": "ckpt", "url": f"/output/train/{cycle}/model.pb"},
            {"format": "ckpt", "url": MODEL_URL},
        ],
        "dataURL": f"/data/eval/{cycle}.txt",
    }
    start_stage(api, ds_lc, "eval", eval_input)
    pods = api.live_pods("eval")
    (pod,) = [p for p in pods if p["status"].get("phase") != "Succeeded"]
    name = pod["metadata"]["name"]
    assert len(pods) == cycle
    env = env_of(pod)
    _base_env(env, ns, "eval-worker-")
    assert env["MODEL_URLS"] == (f"/home/data/output/train/{cycle}/model.pb;/home/data" + MODEL_URL)
    assert env["TEST_DATASET_URL"] == f"/home/data/data/eval/{cycle}.txt"
    assert env["ORIGINAL_DATASET_URL"] == "/home/data" + DATASET_URL
    assert pod["spec"]["restartPolicy"] == "OnFailure"
    assert pod["spec"]["hostNetwork"] is True

    api.set_phase_and_wait(name, "Running", "Eval/Running")
    assert api.job()["metadata"]["annotations"]["sedna.io/Eval"] == WORKER_NODE
    node_lc.wait_job_state("Eval/Running")
    api.set_phase_and_wait(name, "Succeeded", "Deploy/Waiting")
    assert api.states()[-3:] == ["Eval/Running", "Eval/Completed", "Deploy/Waiting"]


def _deploy_stage(api: Api, ds_lc: TestLC, node_lc: TestLC, hot: bool) -> None:
    ns = api.ns
    # Deploy Waiting goes to the eval node's LC, with the deploy model
    node_lc.wait_job_state("Deploy/Waiting")
    node_lc.wait_for("model", "insert", "deploy-model")
    (before,) = api.live_pods("inference")
    deploy_input = {"models": [{"format": "ckpt", "url": "/output/eval/best.pb"}]}
    node_lc.report(ns, "deploy", "ready", input=deploy_input)
    if not hot:
        api.wait_latest("Train/Waiting")
        assert api.states()[-3:] == ["Deploy/Ready", "Deploy/Completed", "Train/Waiting"]
        # the inference worker was replaced so it loads the new model
        (after,) = wait_until(lambda: api.live_pods("inference"), what="new inference pod")
        assert after["metadata"]["name"] != before["metadata"]["name"]
        assert api.conditions()[-2]["reason"] == "InferenceWorkerRestarted"
        api.set_phase(after["metadata"]["name"], "Running")
        return
    api.wait_latest("Deploy/Running")
    assert api.states()[-3:] == ["Deploy/Ready", "Deploy/Starting", "Deploy/Running"]
    assert api.job()["metadata"]["annotations"]["sedna.io/Deploy"] == WORKER_NODE
    (same,) = api.live_pods("inference")
    assert same["metadata"]["name"] == before["metadata"]["name"]
    node_lc.wait_job_state("Deploy/Running")
    node_lc.report(ns, "deploy", "completed", input=deploy_input)
    api.wait_latest("Train/Waiting")


@pytest.mark.parametrize("hot", [False, True], ids=["restart", "hot-update"])
def test_sample_job_runs_two_cycles(
    hot: bool,
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    sample_dir: Path,
    logs: LogCapture,
) -> None:
    gm = make_gm()
    ds_lc = make_lc(gm, DS_NODE)
    node_lc = make_lc(gm, WORKER_NODE)
    # first sync: startTime, the inference worker, Train/Waiting
    start_sample_job(api, sample_dir, hot_update=hot)
    job = api.job()
    assert job["status"]["startTime"]
    (infer,) = api.live_pods("inference")
    env = env_of(infer)
    _base_env(env, api.ns, "inferworker-")
    assert env["MODEL_URL"] == "/home/data" + MODEL_URL
    assert env["HEM_NAME"] == "IBT"
    assert env["HEM_PARAMETERS"] == "null"
    assert "restartPolicy" not in infer["spec"] or infer["spec"]["restartPolicy"] != "OnFailure"
    assert infer["spec"]["hostNetwork"] is True
    if hot:
        assert env["MODEL_HOT_UPDATE"] == "true"
        assert env["MODEL_POLL_PERIOD_SECONDS"] == "30"
        assert env["MODEL_HOT_UPDATE_CONFIG"] == "/model-hot-update/model_config.json"
        assert mounts_of(infer)["/model-hot-update"]
        assert job["metadata"]["annotations"]["sedna.io/model-hot-update-config"] == (
            f"/var/lib/sedna/model-hot-update/{api.ns}/incrementallearningjob/{JOB}"
            "/model_config.json"
        )
    else:
        assert "MODEL_HOT_UPDATE" not in env
    api.set_phase(infer["metadata"]["name"], "Running")
    # one Event names the first state and the pod created for it
    api.wait_event("TrainWaiting", f"created inference worker pod {infer['metadata']['name']}")

    for cycle in (1, 2):
        _train_stage(api, ds_lc, node_lc, cycle)
        _eval_stage(api, ds_lc, node_lc, cycle)
        _deploy_stage(api, ds_lc, node_lc, hot)

    # every state change is an Event and one readable log line
    reasons = {r for _, r, _ in api.event_list()}
    assert {"TrainWaiting", "TrainStarting", "TrainRunning", "EvalCompleted"} <= reasons
    assert {"DeployCompleted", "DeployReady"} <= reasons
    assert logs.contains(f"{api.ns}/{JOB}: stage Train | condition Ready -> Starting | pod ")
    assert logs.contains(
        f"{api.ns}/{JOB}: stage Train | condition Starting -> Running", WORKER_NODE
    )
    # two cycles: exactly two train and two eval pods, never more
    assert len(api.worker_pods("train")) == 2
    assert len(api.worker_pods("eval")) == 2
    # the dataset node's LC kept the job the whole time; no job was sent to node ""
    assert not ds_lc.messages(KIND, "delete", JOB)
