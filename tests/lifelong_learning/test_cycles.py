"""Whole LL cycles through the real websocket with a Go-protocol LC, and Sedna's sample."""

from __future__ import annotations

from pathlib import Path

from .conftest import GMFactory, LCFactory
from .helpers import (
    DEPLOY_INPUT,
    DS_NODE,
    EVAL_INPUT,
    EVAL_OUTPUT,
    JOB,
    KIND,
    TRAIN_INPUT,
    TRAIN_OUTPUT,
    WORKER_NODE,
    Api,
    data_of,
    env_of,
    run_stage,
    start_sample_job,
    wait_until,
)


def test_sedna_sample_is_accepted_and_runs_a_whole_cycle(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    gm = make_gm()
    ds_lc = make_lc(gm, DS_NODE)
    node_lc = make_lc(gm, WORKER_NODE)
    start_sample_job(api, sample_dir)
    assert api.job()["status"]["startTime"]
    # no inference worker before Deploy (Sedna's LL creates it only then)
    assert api.worker_pods("inference") == []
    waiting = ds_lc.wait_job_state("Train/Waiting")
    assert waiting.payload["kind"] == "LifelongLearningJob"
    assert {m.kind for m in ds_lc.messages()} <= {KIND, "dataset"}  # no Model is sent

    # Train: the LC's trigger held; the GM creates the train worker
    train = run_stage(api, ds_lc, "train", TRAIN_INPUT)
    spec = train["spec"]
    assert spec["hostNetwork"] is True and spec["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert spec["restartPolicy"] == "OnFailure"
    env = env_of(train)
    assert env["HAS_COMPLETED_INITIAL_TRAINING"] == "false" and "CLOUD_KB_INDEX" not in env
    assert env["KB_SERVER"] == "http://localhost:9020"
    assert env["LC_SERVER"] == "http://localhost:9100"
    assert env["OUTPUT_URL"].endswith("/output/train/1")  # the container path of the dir
    assert env["WORKER_NAME"].startswith("train-worker-")
    assert train["metadata"]["generateName"] == f"{JOB}-train-"
    assert api.job()["metadata"]["annotations"]["sedna.io/Train"] == WORKER_NODE
    node_lc.wait_job_state("Train/Running")  # the worker's node hears of the job

    # the worker reports its knowledge base; the GM rebuilds status.knowledgeBase
    node_lc.report(api.ns, "train", "completed", output=TRAIN_OUTPUT)
    api.wait_latest("Eval/Waiting")  # the report completes the stage
    assert api.states()[-3:] == ["Train/Running", "Train/Completed", "Eval/Waiting"]
    assert "ownerInfo" not in data_of(api.conditions()[-2])["output"]
    kb = api.knowledge_base()
    assert kb == {
        "AIModels": {
            "numberOfAIModels": 1,
            "listOfAIModels": [
                {"modelID": "task-1", "averagePrecision": 0.8, "numberOfTrainSamples": 96}
            ],
        },
        "AIClasses": {"numberOfAIClasses": 3, "listOfAIClasses": ["cooler", "no change", "warmer"]},
        "samples": {"numberOfLabeledUnseenSample": 96, "numberOfUnseenSample": 0},
    }
    api.set_phase(train["metadata"]["name"], "Succeeded")
    # the train node is not the dataset's: its LC is told the stage ended
    node_lc.wait_for(KIND, "delete", JOB)

    # Eval
    ev = run_stage(api, ds_lc, "eval", EVAL_INPUT)
    env = env_of(ev)
    assert set(env) >= {"MODEL_URLS", "OUTPUT_URL", "TEST_DATASET_URL", "KB_SERVER"}
    assert ev["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"
    node_lc.report(api.ns, "eval", "completed", output=EVAL_OUTPUT)
    api.wait_latest("Deploy/Waiting")
    api.set_phase(ev["metadata"]["name"], "Succeeded")

    # Deploy: the first inference worker is created, the stage completes
    ds_lc.wait_job_state("Deploy/Waiting")
    ds_lc.report(api.ns, "deploy", "ready", input=DEPLOY_INPUT)
    api.wait_latest("Train/Waiting")
    (infer,) = api.live_pods("inference")
    env = env_of(infer)
    assert env["MODEL_URLS"].endswith("deploy/index.pkl") and env["OUTPUT_URL"] == "/output"
    assert "KB_SERVER" not in env and infer["spec"]["hostNetwork"] is True
    assert infer["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert api.states()[-4:] == [
        "Deploy/Waiting",
        "Deploy/Ready",
        "Deploy/Completed",
        "Train/Waiting",
    ]

    # Round 2 trains on the cloud knowledge base and a new Deploy replaces the worker
    train2 = run_stage(api, ds_lc, "train", {**TRAIN_INPUT, "outputDir": "/output/train/2"})
    env = env_of(train2)
    assert env["HAS_COMPLETED_INITIAL_TRAINING"] == "true"
    assert env["CLOUD_KB_INDEX"] == "/output/train/1/index.pkl"
    api.set_phase_and_wait(train2["metadata"]["name"], "Succeeded", "Eval/Waiting")
    ev2 = run_stage(api, ds_lc, "eval", EVAL_INPUT)
    api.set_phase_and_wait(ev2["metadata"]["name"], "Succeeded", "Deploy/Waiting")
    ds_lc.report(api.ns, "deploy", "ready", input=DEPLOY_INPUT)
    api.wait_latest("Train/Waiting")
    wait_until(lambda: len(api.live_pods("inference")) == 1, what="one inference worker")
    (infer2,) = api.live_pods("inference")
    assert infer2["metadata"]["name"] != infer["metadata"]["name"]
    assert len(api.worker_pods("train")) == 2 and len(api.worker_pods("eval")) == 2


def test_deploy_completed_by_the_lc_keeps_the_inference_worker(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    """An LC with nothing to deploy reports deploy/completed: no worker is created."""
    gm = make_gm()
    ds_lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    train = run_stage(api, ds_lc, "train", TRAIN_INPUT)
    api.set_phase_and_wait(train["metadata"]["name"], "Succeeded", "Eval/Waiting")
    ev = run_stage(api, ds_lc, "eval", EVAL_INPUT)
    api.set_phase_and_wait(ev["metadata"]["name"], "Succeeded", "Deploy/Waiting")
    ds_lc.report(api.ns, "deploy", "completed")
    api.wait_latest("Train/Waiting")
    assert api.worker_pods("inference") == []


def test_failed_worker_sends_the_job_back_to_train(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    gm = make_gm(options={"failureBackoffSeconds": 0.01, "failureBackoffMaxSeconds": 0.01})
    ds_lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    train = run_stage(api, ds_lc, "train", TRAIN_INPUT)
    api.set_phase_and_wait(train["metadata"]["name"], "Failed", "Train/Waiting")
    assert api.states()[-2:] == ["Train/Failed", "Train/Waiting"]
