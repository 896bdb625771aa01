"""The simulated LC against the GM's real websocket layer: Sedna's LC side of a cycle."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sedna.embedded.lc import SimulatedLC, decode_message, encode_message
from sedna.runtime.clock import FakeClock
from sedna.runtime.config import WebsocketConfig
from sedna.runtime.messaging import MessageLayer, UpstreamMessage, UpstreamRegistry
from sedna.runtime.metrics import Metrics

from .helpers import advance_until, wait_for

NODE = "edge-test"
NS = "demo"
TOKEN = "s3cret-token"
LABEL = "incrementallearningjob.sedna.io/worker-type"


class GM:
    """One MessageLayer that records every report; `restart` rebinds the same port."""

    def __init__(self, token_file: Path) -> None:
        self.token_file = token_file
        self.reports: list[UpstreamMessage] = []
        self.port = 0
        self.metrics = Metrics()
        self.layer = self._start(0)

    def _start(self, port: int) -> MessageLayer:
        registry = UpstreamRegistry()
        registry.register("incrementallearningjob", self.reports.append)
        registry.register("dataset", self.reports.append)
        settings = WebsocketConfig(
            address="127.0.0.1", port=port, auth="token", tokenFile=str(self.token_file)
        )
        layer = MessageLayer(settings, metrics=self.metrics, upstream=registry)
        layer.start()
        self.port = layer.port
        return layer

    def restart(self) -> None:
        self.layer.stop()
        self.layer = self.start_again()

    def start_again(self) -> MessageLayer:
        """A new layer on the port of the stopped one, where the LC redials.

        The port was free a moment ago and is bound again now: meanwhile it may be held
        for a moment, e.g. by an LC dial that the kernel gave that very port as its
        local one. Retry until the deadline instead of failing on the first try.
        """

        def bind() -> MessageLayer | None:
            try:
                return self._start(self.port)
            except RuntimeError as exc:
                if "cannot listen" not in str(exc):
                    raise
                return None

        return wait_for(bind, f"port {self.port} to be free again", timeout=30)

    def send(self, obj: dict[str, Any]) -> None:
        self.layer.send(NODE, "insert", obj)

    def report(self, phase: str, status: str) -> dict[str, Any]:
        def probe() -> dict[str, Any] | None:
            for r in self.reports:
                if r.content.get("phase") == phase and r.content.get("status") == status:
                    return r.content
            return None

        return wait_for(probe, f"report {phase}/{status}")


@pytest.fixture()
def gm(tmp_path: Path) -> Iterator[GM]:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    g = GM(token_file)
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
        NODE, f"ws://127.0.0.1:{gm.port}/", token=TOKEN, clock=clock, reconnect_seconds=0.05
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
        "status": "True",
        "lastTransitionTime": f"2024-01-01T00:00:{_stamp[0] % 60:02d}Z",
        "lastHeartbeatTime": "2024-01-01T00:00:00Z",
    }
    if data is not None:
        c["data"] = json.dumps(data)
    return c


def model(name: str, url: str, fmt: str) -> dict[str, Any]:
    return {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "Model",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"url": url, "format": fmt},
    }


def job(conditions: list[dict[str, Any]], deploy_threshold: float = 0.1) -> dict[str, Any]:
    return {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "IncrementalLearningJob",
        "metadata": {"name": "helmet", "namespace": NS, "uid": "job-uid"},
        "spec": {
            "initialModel": {"name": "initial-model"},
            "dataset": {"name": "ds", "trainProb": 0.8},
            "trainSpec": {
                "trigger": {
                    "timer": {"start": "00:00", "end": "24:00"},
                    "condition": {"operator": ">", "threshold": 50, "metric": "num_of_samples"},
                }
            },
            "deploySpec": {
                "model": {"name": "deploy-model"},
                "trigger": {
                    "condition": {
                        "operator": ">",
                        "threshold": deploy_threshold,
                        "metric": "precision_delta[0]",
                    }
                },
            },
            "outputDir": "/output",
        },
        "status": {"conditions": conditions},
    }


def worker_pod(kind: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"helmet-{kind}-abcde",
            "namespace": NS,
            "labels": {LABEL: kind},
            "ownerReferences": [
                {"kind": "IncrementalLearningJob", "name": "helmet", "uid": "job-uid",
                 "controller": True}
            ],
        }
    }  # fmt: skip


def seed(gm: GM, lc: SimulatedLC) -> None:
    gm.send(model("initial-model", "/models/base_model", "ckpt"))
    gm.send(model("deploy-model", "/models/deploy_model/saved_model.pb", "pb"))
    gm.send({
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "Dataset",
        "metadata": {"name": "ds", "namespace": NS},
        "spec": {"url": "/data/train.txt", "format": "txt", "nodeName": NODE},
    })  # fmt: skip
    wait_for(lambda: len(lc.models) == 2 and lc.datasets, "models and dataset at the LC")


def test_frames_round_trip() -> None:
    frame = encode_message("ns", "incrementallearningjob", "j", "status", {"phase": "train"})
    header, payload = decode_message(frame)
    assert header["operation"] == "status" and payload == {"phase": "train"}
    assert json.loads(frame)["content"] == "eyJwaGFzZSI6InRyYWluIn0="  # base64, like Go's []byte


def test_a_whole_cycle(gm: GM, lc: SimulatedLC, clock: FakeClock) -> None:
    seed(gm, lc)
    history = [cond("Train", "Waiting")]
    gm.send(job(history))
    wait_for(lambda: lc.jobs, "the job at the LC")

    # Train: reported once the simulated dataset gives more than 50 train samples.
    ready = advance_until(
        clock, lambda: [r.content for r in gm.reports if r.content.get("status") == "ready"],
        "train/ready",
    )[0]  # fmt: skip
    assert ready == {
        "phase": "train",
        "status": "ready",
        "input": {
            "models": [{"format": "ckpt", "url": "/models/base_model"}],
            "dataURL": "/output/data/train/1/data.txt",
            "outputDir": "/output/train/1",
        },
        "output": None,
    }
    assert gm.reports[0].node_name == NODE
    # Dataset reports go out first in a tick but are handled on the GM's dataset
    # thread, not the job's: train/ready may be handled before any of them.
    ds_reports = wait_for(
        lambda: [r.content for r in gm.reports if r.kind == "dataset"], "a dataset report"
    )
    assert ds_reports and ds_reports[-1]["numberOfSamples"] > 0

    history += [cond("Train", "Ready", {"input": ready["input"]}), cond("Train", "Starting"),
                cond("Train", "Running")]  # fmt: skip
    gm.send(job(history))
    wait_for(lambda: len(lc.jobs["demo/helmet"].obj["status"]["conditions"]) == 4, "update")
    lc.worker_finished(worker_pod("train"))
    trained = gm.report("train", "completed")
    assert trained["output"]["models"] == [
        {"format": "ckpt", "url": "/output/train/1/model.ckpt"},
        {"format": "pb", "url": "/output/train/1/model.pb"},
    ]

    # Eval: the trained model (deploy model's format) against the deployed one.
    history += [cond("Train", "Completed", {"output": trained["output"]}), cond("Eval", "Waiting")]
    gm.send(job(history))
    ev = advance_until(clock, lambda: _find(gm, "eval", "ready"), "eval/ready")
    assert ev["input"]["models"] == [
        {"format": "pb", "url": "/output/train/1/model.pb"},
        {"format": "pb", "url": "/models/deploy_model/saved_model.pb"},
    ]
    assert ev["input"]["dataURL"] == "/output/data/eval/1/data.txt"

    history += [cond("Eval", "Ready", {"input": ev["input"]}), cond("Eval", "Running")]
    gm.send(job(history))
    wait_for(lambda: len(lc.jobs["demo/helmet"].obj["status"]["conditions"]) == 8, "update")
    lc.worker_finished(worker_pod("eval"))
    metrics = gm.report("eval", "completed")
    new, old = metrics["output"]["models"]
    assert new["url"].endswith("model.pb") and new["metrics"]["precision"]
    assert old["url"] == "/models/deploy_model/saved_model.pb" and old["metrics"]["precision"]

    # Deploy: precision improved by more than 0.1.
    history += [cond("Eval", "Completed", {"output": metrics["output"]}),
                cond("Deploy", "Waiting")]  # fmt: skip
    gm.send(job(history))
    deploy = advance_until(clock, lambda: _find(gm, "deploy", "ready"), "deploy/ready")
    assert [m["url"] for m in deploy["input"]["models"]] == [
        "/output/train/1/model.pb",
        "/models/deploy_model/saved_model.pb",
    ]
    # One report per condition: more ticks on the same Deploy/Waiting add no job report.
    count = len(gm.reports)
    for _ in range(4):
        wait_for(clock.has_waiters, "the LC to wait for its next tick")
        clock.step(0.5)
    time.sleep(0.05)
    assert all(r.kind == "dataset" for r in gm.reports[count:])


def test_no_deploy_when_the_trigger_fails(gm: GM, lc: SimulatedLC, clock: FakeClock) -> None:
    seed(gm, lc)
    output = {"models": [
        {"format": "pb", "url": "/o/new.pb", "metrics": {"precision": [0.7]}},
        {"format": "pb", "url": "/o/old.pb", "metrics": {"precision": [0.65]}},
    ]}  # fmt: skip
    gm.send(job([cond("Eval", "Completed", {"output": output}), cond("Deploy", "Waiting")]))
    done = advance_until(clock, lambda: _find(gm, "deploy", "completed"), "deploy/completed")
    assert "input" not in done


def test_deleted_job_is_forgotten(gm: GM, lc: SimulatedLC) -> None:
    seed(gm, lc)
    gm.send(job([cond("Train", "Waiting")]))
    wait_for(lambda: lc.jobs, "the job at the LC")
    gm.layer.send(NODE, "delete", job([]))
    wait_for(lambda: not lc.jobs, "the job to be forgotten")


def test_reconnects_and_delivers_what_was_queued(gm: GM, lc: SimulatedLC) -> None:
    seed(gm, lc)
    gm.send(job([cond("Train", "Running")]))
    wait_for(lambda: lc.jobs, "the job at the LC")
    gm.layer.stop()
    wait_for(lambda: not lc.connected.is_set(), "the LC to notice the GM is gone")
    lc.worker_finished(worker_pod("train"))
    wait_for(lambda: any(s[1].get("phase") == "train" for s in lc.sent), "a queued report")
    gm.layer = gm.start_again()
    wait_for(lc.connected.is_set, "the LC to reconnect")
    gm.send(job([cond("Train", "Running")]))  # a restarted GM resends (its initial list)
    assert gm.report("train", "completed")["output"]["models"]


def test_a_wrong_token_is_refused(gm: GM, clock: FakeClock) -> None:
    sim = SimulatedLC(NODE, f"ws://127.0.0.1:{gm.port}/", token="wrong", clock=clock,
                      reconnect_seconds=0.05)  # fmt: skip
    sim.start()
    try:
        wait_for(
            lambda: gm.metrics.lc_messages_rejected.labels(reason="unauthorized")._value.get(),
            "the GM to refuse the LC",
        )
        assert not sim.connected.is_set()
    finally:
        sim.stop()


def _find(gm: GM, phase: str, status: str) -> dict[str, Any] | None:
    for r in gm.reports:
        if r.content.get("phase") == phase and r.content.get("status") == status:
            return r.content
    return None


def test_a_stale_worker_report_is_dropped(gm: GM, lc: SimulatedLC) -> None:
    seed(gm, lc)
    gm.send(job([cond("Eval", "Running")]))
    wait_for(lambda: lc.jobs, "the job at the LC")
    lc.worker_finished(worker_pod("train"))  # its stage is over
    lc.worker_finished(worker_pod("eval"))
    gm.report("eval", "completed")
    assert _find(gm, "train", "completed") is None
