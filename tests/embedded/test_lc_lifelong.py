"""The simulated LC's lifelong-learning play against the GM's real websocket layer:
Sedna's LL LC side of a whole cycle, report by report."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from sedna.embedded.lc import SimulatedLC
from sedna.embedded.plays import default_plays
from sedna.embedded.plays.lifelong_learning import LifelongLearningPlay
from sedna.runtime.clock import FakeClock
from sedna.runtime.config import WebsocketConfig
from sedna.runtime.kube import DATASETS, KubeClient
from sedna.runtime.messaging import MessageLayer, UpstreamMessage, UpstreamRegistry
from sedna.runtime.metrics import Metrics

from .helpers import advance_until, wait_for

NODE = "edge-test"
NS = "demo"
KIND = "lifelonglearningjob"
LABEL = "lifelonglearningjob.sedna.io/worker-type"


class GM:
    """One MessageLayer (no auth) that records every LL report."""

    def __init__(self) -> None:
        self.reports: list[UpstreamMessage] = []
        registry = UpstreamRegistry()
        registry.register(KIND, self.reports.append)
        registry.register("dataset", lambda m: None)
        settings = WebsocketConfig(address="127.0.0.1", port=0, auth="none")
        self.layer = MessageLayer(settings, metrics=Metrics(), upstream=registry)
        self.layer.start()

    def send(self, obj: dict[str, Any], operation: str = "insert") -> None:
        self.layer.send(NODE, operation, obj)

    def find(self, phase: str, status: str) -> dict[str, Any] | None:
        for r in self.reports:
            if r.content.get("phase") == phase and r.content.get("status") == status:
                return r.content
        return None


@pytest.fixture()
def gm() -> Iterator[GM]:
    g = GM()
    try:
        yield g
    finally:
        g.layer.stop()


@pytest.fixture()
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture()
def lc(gm: GM, clock: FakeClock) -> Iterator[SimulatedLC]:
    sim = SimulatedLC(
        NODE,
        f"ws://127.0.0.1:{gm.layer.port}/",
        clock=clock,
        reconnect_seconds=0.05,
        plays=[LifelongLearningPlay()],
    )
    sim.start()
    wait_for(sim.connected.is_set, "the LC to connect")
    try:
        yield sim
    finally:
        sim.stop()


_stamp = [0]


def cond(stage: str, ctype: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
    _stamp[0] += 1
    c: dict[str, Any] = {
        "stage": stage,
        "type": ctype,
        "lastTransitionTime": f"2024-01-01T00:{_stamp[0] // 60 % 60:02d}:{_stamp[0] % 60:02d}Z",
    }
    if data is not None:
        c["data"] = json.dumps(data)
    return c


def job(conditions: list[dict[str, Any]], output_dir: str = "/output") -> dict[str, Any]:
    return {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "LifelongLearningJob",
        "metadata": {"name": "atcii", "namespace": NS, "uid": "job-uid"},
        "spec": {
            "dataset": {"name": "ds", "trainProb": 0.8},
            "trainSpec": {
                "trigger": {
                    "timer": {"start": "00:00", "end": "24:00"},
                    "condition": {"operator": ">", "threshold": 50, "metric": "num_of_samples"},
                }
            },
            "outputDir": output_dir,
        },
        "status": {"conditions": conditions},
    }


def worker_pod(kind: str, owner_kind: str = "LifelongLearningJob") -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"atcii-{kind}-abcde",
            "namespace": NS,
            "labels": {LABEL: kind},
            "ownerReferences": [
                {"kind": owner_kind, "name": "atcii", "uid": "job-uid", "controller": True}
            ],
        }
    }


def seed(gm: GM, lc: SimulatedLC) -> None:
    gm.send({
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "Dataset",
        "metadata": {"name": "ds", "namespace": NS},
        "spec": {"url": "/data/trainData.csv", "format": "csv", "nodeName": NODE},
    })  # fmt: skip
    wait_for(lambda: lc.datasets, "the dataset at the LC")


def conditions_at_lc(lc: SimulatedLC) -> int:
    (play,) = lc.plays
    assert isinstance(play, LifelongLearningPlay)
    jobs = play.jobs
    return len(jobs[f"{NS}/atcii"].obj["status"]["conditions"]) if jobs else 0


def test_the_embedded_lc_plays_lifelong_learning() -> None:
    assert any(isinstance(p, LifelongLearningPlay) for p in default_plays())


def test_a_whole_cycle(gm: GM, lc: SimulatedLC, clock: FakeClock) -> None:
    seed(gm, lc)
    history = [cond("Train", "Waiting")]
    gm.send(job(history))
    wait_for(lambda: conditions_at_lc(lc), "the job at the LC")

    # Train: once more than 50 train samples arrived; no model (the KB is the base).
    ready = advance_until(clock, lambda: gm.find("train", "ready"), "train/ready")
    assert ready == {
        "phase": "train",
        "status": "ready",
        "input": {"dataURL": "/output/data/train/1/data.txt", "outputDir": "/output/train/1"},
    }
    assert gm.reports[0].node_name == NODE and gm.reports[0].kind == KIND

    history += [cond("Train", "Ready", {"input": ready["input"]}), cond("Train", "Running")]
    gm.send(job(history))
    wait_for(lambda: conditions_at_lc(lc) == 3, "the update at the LC")
    lc.worker_finished(worker_pod("train"))
    trained = wait_for(lambda: gm.find("train", "completed"), "train/completed")
    (kb,) = trained["output"]["models"]
    assert kb["url"] == "/output/train/1/index.pkl" and kb["format"] == "pkl"
    assert kb["classes"] and kb["current_metric"] == {"task-1": {"precision_score": 0.8}}
    assert kb["number_of_labeled_unseen_sample"] > 50

    # Eval: the trained knowledge base, the round's eval data and output dir.
    history += [cond("Train", "Completed", {"output": trained["output"]}), cond("Eval", "Waiting")]
    gm.send(job(history))
    ev = advance_until(clock, lambda: gm.find("eval", "ready"), "eval/ready")
    assert ev["input"]["models"] == trained["output"]["models"]
    assert ev["input"]["dataURL"] == "/output/data/eval/1/data.txt"
    assert ev["input"]["outputDir"] == "/output/eval/1"

    history += [cond("Eval", "Ready", {"input": ev["input"]}), cond("Eval", "Running")]
    gm.send(job(history))
    wait_for(lambda: conditions_at_lc(lc) == 7, "the update at the LC")
    lc.worker_finished(worker_pod("eval"))
    evaluated = wait_for(lambda: gm.find("eval", "completed"), "eval/completed")
    (model,) = evaluated["output"]["models"]
    assert model["url"] == kb["url"] and model["metrics"] == {"precision_score": [0.9]}

    # Deploy: the evaluated model is copied to the deploy path and deploy/ready says so.
    history += [cond("Eval", "Completed", {"output": evaluated["output"]}),
                cond("Deploy", "Waiting")]  # fmt: skip
    gm.send(job(history))
    deploy = advance_until(clock, lambda: gm.find("deploy", "ready"), "deploy/ready")
    assert deploy["input"] == {"models": [{"format": "pkl", "url": "/output/train/1/index.pkl"}]}

    # One report per condition: more ticks on the same Deploy/Waiting add none.
    count = len(gm.reports)
    for _ in range(4):
        wait_for(clock.has_waiters, "the LC to wait for its next tick")
        clock.step(0.5)
    time.sleep(0.05)
    assert len(gm.reports) == count

    # The next round trains again and its knowledge base has one task more.
    history += [cond("Deploy", "Ready"), cond("Deploy", "Completed"), cond("Train", "Waiting")]
    gm.send(job(history))
    again = advance_until(
        clock,
        lambda: [r.content for r in gm.reports if r.content.get("status") == "ready"][3:],
        "a second train/ready",
    )[0]
    assert again["input"]["outputDir"] == "/output/train/2"
    history += [cond("Train", "Ready", {"input": again["input"]}), cond("Train", "Running")]
    gm.send(job(history))
    wait_for(lambda: conditions_at_lc(lc) == len(history), "the update at the LC")
    lc.worker_finished(worker_pod("train"))
    second = wait_for(
        lambda: [r.content for r in gm.reports if r.content.get("status") == "completed"][2:],
        "the second train/completed",
    )[0]
    assert sorted(second["output"]["models"][0]["current_metric"]) == ["task-1", "task-2"]


def test_remote_output_gets_a_data_index(gm: GM, lc: SimulatedLC, clock: FakeClock) -> None:
    seed(gm, lc)
    gm.send(job([cond("Train", "Waiting")], output_dir="s3://kb/out/"))
    ready = advance_until(clock, lambda: gm.find("train", "ready"), "train/ready")
    assert ready["input"]["dataIndexURL"] == "s3://kb/out/data/train/1/dataIndex.txt"


def test_eval_without_a_trained_model_fails(gm: GM, lc: SimulatedLC, clock: FakeClock) -> None:
    seed(gm, lc)
    gm.send(job([cond("Train", "Completed"), cond("Eval", "Waiting")]))
    failed = advance_until(clock, lambda: gm.find("eval", "failed"), "eval/failed")
    assert "input" not in failed


def test_deploy_without_an_evaluated_model_completes(
    gm: GM, lc: SimulatedLC, clock: FakeClock
) -> None:
    seed(gm, lc)
    gm.send(job([cond("Eval", "Completed"), cond("Deploy", "Waiting")]))
    done = advance_until(clock, lambda: gm.find("deploy", "completed"), "deploy/completed")
    assert "input" not in done


def test_deleted_job_is_forgotten_and_other_kinds_are_left_alone(gm: GM, lc: SimulatedLC) -> None:
    gm.send(job([cond("Train", "Waiting")]))
    wait_for(lambda: conditions_at_lc(lc), "the job at the LC")
    (play,) = lc.plays
    assert isinstance(play, LifelongLearningPlay)
    assert not play.on_worker_finished(lc, worker_pod("train", owner_kind="Other"))
    gm.send(job([]), operation="delete")
    wait_for(lambda: not play.jobs, "the job forgotten")


def test_a_dataset_the_gm_never_sent_is_read_from_the_api(
    gm: GM, clock: FakeClock, api_client: Any, namespace: str
) -> None:
    """Without the GM's dataset feature the LC still finds the job's Dataset."""
    kube = KubeClient(api_client)
    kube.resource(DATASETS).create(
        namespace,
        {
            "apiVersion": "sedna.io/v1alpha1",
            "kind": "Dataset",
            "metadata": {"name": "ds"},
            "spec": {"url": "/data/trainData.csv", "format": "csv", "nodeName": NODE},
        },
    )
    sim = SimulatedLC(
        NODE,
        f"ws://127.0.0.1:{gm.layer.port}/",
        kube=kube,
        clock=clock,
        reconnect_seconds=0.05,
        plays=[LifelongLearningPlay()],
    )
    sim.start()
    try:
        wait_for(sim.connected.is_set, "the LC to connect")
        payload = job([cond("Train", "Waiting")])
        payload["metadata"]["namespace"] = namespace
        gm.send(payload)
        ready = advance_until(clock, lambda: gm.find("train", "ready"), "train/ready")
        assert ready["input"]["outputDir"] == "/output/train/1"
        assert not sim.datasets  # read for the job, not taken for one the GM sent
    finally:
        sim.stop()
