"""The simulated LC decides what Sedna's LC decides, seen from the GM's websocket."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from sedna.embedded.lc import SimulatedLC
from sedna.runtime.clock import FakeClock

from .helpers import advance_until, wait_for
from .test_lc import GM, NODE, NS, TOKEN, _find, clock, cond, gm, job, lc, model, seed

__all__ = ["clock", "gm", "lc"]  # fixtures

PB_OUT = {"models": [{"format": "pb", "url": "/output/train/1/model.pb"}]}


def _evaluated(new: Any, old: Any) -> list[dict[str, Any]]:
    output = {"models": [
        {"format": "pb", "url": "/output/train/1/model.pb", "metrics": new},
        {"format": "pb", "url": "/models/deploy_model/saved_model.pb", "metrics": old},
    ]}  # fmt: skip
    return [
        cond("Train", "Completed", {"output": PB_OUT}),
        cond("Eval", "Completed", {"output": output}),
        cond("Deploy", "Waiting"),
    ]


def _with(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    *parents, last = path.split(".")
    node = obj["spec"]
    for p in parents:
        node = node.setdefault(p, {})
    if value is None:
        node.pop(last, None)
    else:
        node[last] = value
    return obj


def _dataset(url: str, fmt: str) -> dict[str, Any]:
    return {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "Dataset",
        "metadata": {"name": "ds", "namespace": NS},
        "spec": {"url": url, "format": fmt, "nodeName": NODE},
    }


def _ticks(clock: FakeClock, n: int, step: float = 0.5) -> None:
    """Let the LC run `n` ticks of virtual time (each one finished before the next)."""
    for _ in range(n):
        wait_for(clock.has_waiters, "the LC to wait for its next tick")
        clock.step(step)
    wait_for(clock.has_waiters, "the LC to finish its tick")


def _job_reports(gm: GM) -> list[dict[str, Any]]:
    return [r.content for r in gm.reports if r.kind == "incrementallearningjob"]


def test_a_list_valued_deploy_metric_is_0_and_does_not_deploy(
    gm: GM, lc: SimulatedLC, clock: FakeClock
) -> None:
    # Sedna's helmet sample: `precision_delta > 0.1`, and the delta is a list.
    seed(gm, lc)
    obj = job(_evaluated({"precision": [0.79]}, {"precision": [0.62]}))
    gm.send(_with(obj, "deploySpec.trigger.condition.metric", "precision_delta"))
    done = advance_until(clock, lambda: _find(gm, "deploy", "completed"), "deploy/completed")
    assert "input" not in done
    assert _find(gm, "deploy", "ready") is None


def test_deploy_completed_without_a_condition(gm: GM, lc: SimulatedLC, clock: FakeClock) -> None:
    # Sedna's Trigger holds its condition as a value: absent, the metric is "", never met.
    seed(gm, lc)
    obj = job(_evaluated({"precision": [0.79]}, {"precision": [0.62]}))
    gm.send(_with(obj, "deploySpec.trigger", None))
    advance_until(clock, lambda: _find(gm, "deploy", "completed"), "deploy/completed")


def test_eval_metrics_that_do_not_decode_mean_no_deploy(
    gm: GM, lc: SimulatedLC, clock: FakeClock
) -> None:
    seed(gm, lc)
    gm.send(job(_evaluated({"precision": ["high"]}, {"precision": [0.62]})))
    advance_until(clock, lambda: _find(gm, "deploy", "completed"), "deploy/completed")


@pytest.mark.parametrize(
    "history",
    [
        # the deployed model lacks the metric: Sedna indexes past its list and panics
        _evaluated({"precision": [0.79]}, {"recall": [0.5]}),
        # no trained model of the deploy model's format (pb): Sedna dereferences nil
        [cond("Train", "Completed", {"output": {"models": [{"format": "ckpt", "url": "/o/c"}]}}),
         *_evaluated({"precision": [0.79]}, {"precision": [0.62]})[1:]],
        # the same at Eval/Waiting
        [cond("Train", "Completed", {"output": {"models": [{"format": "ckpt", "url": "/o/c"}]}}),
         cond("Eval", "Waiting")],
    ],
)  # fmt: skip
def test_where_sedna_panics_the_job_waits_without_a_report(
    gm: GM, lc: SimulatedLC, clock: FakeClock, history: list[dict[str, Any]]
) -> None:
    seed(gm, lc)
    gm.send(job(history))
    wait_for(lambda: lc.jobs, "the job at the LC")
    _ticks(clock, 6)
    assert _job_reports(gm) == []


def test_a_deploy_url_sedna_cannot_copy_to_reports_nothing(
    gm: GM, lc: SimulatedLC, clock: FakeClock
) -> None:
    gm.send(model("initial-model", "/models/base_model", "pb"))
    gm.send(model("deploy-model", "http://models.example/deploy.pb", "pb"))
    seed(gm, lc)
    lc.models[f"{NS}/deploy-model"] = model("deploy-model", "http://models.example/d.pb", "pb")
    gm.send(job(_evaluated({"precision": [0.79]}, {"precision": [0.62]})))
    wait_for(lambda: lc.jobs, "the job at the LC")
    _ticks(clock, 6)
    assert _job_reports(gm) == []


def test_the_dataset_is_seen_and_reported_only_when_polled(gm: GM, clock: FakeClock) -> None:
    # Sedna's cadence: datasets every 60 s, jobs every 10 s.
    sim = SimulatedLC(NODE, f"ws://127.0.0.1:{gm.port}/", token=TOKEN, clock=clock,
                      reconnect_seconds=0.05, tick_seconds=10, dataset_poll_seconds=60)  # fmt: skip
    sim.start()
    try:
        wait_for(sim.connected.is_set, "the LC to connect")
        seed(gm, sim)
        gm.send(job([cond("Train", "Waiting")]))
        wait_for(lambda: sim.jobs, "the job at the LC")
        _ticks(clock, 5, step=10)  # 20 samples/s: 800 train samples by now, none polled
        assert _job_reports(gm) == []
        assert [r.content for r in gm.reports if r.kind == "dataset"] == []
        ready = advance_until(
            clock, lambda: _find(gm, "train", "ready"), "train/ready after the next poll"
        )
        assert ready["input"]["dataURL"] == "/output/data/train/1/data.txt"
        counts = [r.content["numberOfSamples"] for r in gm.reports if r.kind == "dataset"]
        assert counts and all(n % 1200 == 0 for n in counts)  # 60 s of 20 samples/s
    finally:
        sim.stop()


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("dataset.trainProb", None),  # Sedna's float64 reads it as 0: no train samples
        ("trainSpec.trigger.condition", None),
        ("outputDir", "http://store.example/out"),
        ("dataset.trainProb", "0.8"),
        ("dataset.trainProb", 1.5),  # Sedna slices past its samples and panics
    ],
)
def test_train_jobs_sedna_never_trains(
    gm: GM, lc: SimulatedLC, clock: FakeClock, path: str, value: Any
) -> None:
    seed(gm, lc)
    gm.send(_with(job([cond("Train", "Waiting")]), path, value))
    wait_for(lambda: lc.jobs, "the job at the LC")
    _ticks(clock, 20)
    assert _job_reports(gm) == []


def test_a_csv_dataset_gets_no_samples_file(gm: GM, lc: SimulatedLC, clock: FakeClock) -> None:
    seed(gm, lc)
    gm.send(_dataset("/data/train.csv", "csv"))
    wait_for(lambda: lc.datasets[f"{NS}/ds"].obj["spec"]["format"] == "csv", "the csv dataset")
    gm.send(job([cond("Train", "Waiting")]))
    wait_for(lambda: lc.jobs, "the job at the LC")
    _ticks(clock, 20)
    assert _job_reports(gm) == []


def test_a_remote_dataset_gets_an_index_file(gm: GM, lc: SimulatedLC, clock: FakeClock) -> None:
    seed(gm, lc)
    gm.send(_dataset("s3://bucket/train.txt", "txt"))
    wait_for(lambda: lc.datasets[f"{NS}/ds"].obj["spec"]["url"].startswith("s3"), "s3 dataset")
    gm.send(job([cond("Train", "Waiting")]))
    ready = advance_until(clock, lambda: _find(gm, "train", "ready"), "train/ready")
    assert ready["input"]["dataURL"] == "/output/data/train/1/data.txt"
    assert ready["input"]["dataIndexURL"] == "/output/data/train/1/dataIndex.txt"
