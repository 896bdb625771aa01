"""`sedna-gm --config config/gm.yaml` also runs Sedna's federated-learning example to the end.

The shipped config simulates the example's cloud node and two edge nodes; the LCs play
the training rounds, the GM records each round once, writes the aggregated model's
metrics and finishes the job; a restart on the same stateDir changes nothing of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sedna.runtime.kube import MODELS, PODS, KubeClient, sedna_resource

from .gm_process import GMProcess, write_config

NS = "default"
JOB = "surface-defect-detection"
LABEL = "federatedlearningjob.sedna.io/"

pytestmark = pytest.mark.timeout(180)


@pytest.fixture()
def gm(tmp_path: Path) -> Iterator[GMProcess]:
    proc = GMProcess(write_config(tmp_path))
    try:
        yield proc
    finally:
        proc.stop()


def job_status(kube: KubeClient) -> dict[str, Any]:
    job = kube.resource(sedna_resource("federatedlearningjobs")).get(NS, JOB)
    return dict(job.get("status") or {})


def pods(kube: KubeClient) -> list[dict[str, Any]]:
    items = kube.resource(PODS).list(NS, label_selector=f"{LABEL}name={JOB}")["items"]
    return list(items)


def test_the_example_trains_its_rounds_and_succeeds(gm: GMProcess) -> None:
    gm.start()
    kube = gm.connect()
    gm.wait_for(lambda: job_status(kube).get("phase") == "Succeeded", "the FL job to succeed", 60)
    status = job_status(kube)
    rounds = [c["message"].split(" ")[1] for c in status["conditions"] if c["type"] == "Training"]
    assert rounds == ["1", "2", "3"], status["conditions"]
    assert [c["status"] for c in status["conditions"] if c["type"] == "Complete"] == ["True"]
    assert (status["active"], status["succeeded"], status["failed"]) == (0, 3, 0)
    placed = sorted(
        (p["metadata"]["labels"][f"{LABEL}worker-type"], p["spec"]["nodeName"]) for p in pods(kube)
    )
    assert placed == [
        ("aggregation", "cloud-node"),
        ("train", "edge-node"),
        ("train", "edge-node-2"),
    ]
    model = kube.resource(MODELS).get(NS, "surface-defect-detection-model")
    assert {m["key"] for m in model["status"]["metrics"]} == {"accuracy", "loss"}
    log = gm.tail(400)
    for r in (1, 2, 3):
        assert f"federated learning job {NS}/{JOB}: round {r} reached" in log

    names = {p["metadata"]["name"] for p in pods(kube)}
    assert gm.stop() == 0, f"unclean exit; log tail:\n{gm.tail()}"
    gm.start()
    kube = gm.connect()
    gm.wait_for(lambda: gm.tail(400).count("sedna-gm started with") >= 2, "the GM again", 60)
    assert {p["metadata"]["name"] for p in pods(kube)} == names
    assert job_status(kube) == status


def test_a_gm_killed_while_the_job_runs_finishes_it_without_a_second_pod(gm: GMProcess) -> None:
    gm.start()
    kube = gm.connect()
    gm.wait_for(lambda: len(pods(kube)) == 3, "the FL job's three pods", 60)
    names = {p["metadata"]["name"] for p in pods(kube)}
    assert gm.proc is not None
    gm.proc.kill()  # SIGKILL: no clean shutdown of anything (the API server is in it too)
    gm.proc.wait()
    gm.proc = None
    gm.start()
    kube = gm.connect()
    gm.wait_for(lambda: job_status(kube).get("phase") == "Succeeded", "the FL job to succeed", 60)
    assert {p["metadata"]["name"] for p in pods(kube)} == names
    rounds = [c for c in job_status(kube)["conditions"] if c["type"] == "Training"]
    assert len({c["message"].split(" ")[1] for c in rounds}) == len(rounds)  # each round once
