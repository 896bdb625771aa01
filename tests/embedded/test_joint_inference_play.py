"""The simulated LC's joint inference play, against the GM's real websocket layer and the
API server (for the edge worker's pod), in virtual time."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from sedna.embedded.lc import SimulatedLC
from sedna.embedded.plays import default_plays
from sedna.embedded.plays.joint_inference import JointInferencePlay
from sedna.runtime.clock import FakeClock
from sedna.runtime.config import WebsocketConfig
from sedna.runtime.kube import PODS, KubeClient
from sedna.runtime.messaging import MessageLayer, UpstreamMessage, UpstreamRegistry
from sedna.runtime.metrics import Metrics

from .helpers import wait_for

NODE = "edge-ji"
LABEL = "jointinferenceservice.sedna.io/"


@pytest.fixture()
def layer() -> Iterator[tuple[MessageLayer, list[UpstreamMessage]]]:
    reports: list[UpstreamMessage] = []
    registry = UpstreamRegistry()
    registry.register("jointinferenceservice", reports.append)
    ml = MessageLayer(
        WebsocketConfig(address="127.0.0.1", port=0, auth="none"),
        metrics=Metrics(),
        upstream=registry,
    )
    ml.start()
    try:
        yield ml, reports
    finally:
        ml.stop()


def service(ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "JointInferenceService",
        "metadata": {"name": "ji", "namespace": ns},
        "spec": {"edgeWorker": {"template": {"spec": {"nodeName": NODE}}}},
    }


def edge_pod(kube: KubeClient, ns: str, phase: str) -> None:
    pods = kube.resource(PODS)
    pods.create(ns, {"metadata": {"name": "ji-edge", "labels": {
        f"{LABEL}name": "ji", f"{LABEL}worker-type": "edge"}},
        "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "i"}]}})  # fmt: skip
    pods.patch(ns, "ji-edge", {"status": {"phase": phase}}, subresource="status")


def test_default_plays_include_joint_inference() -> None:
    assert any(isinstance(p, JointInferencePlay) for p in default_plays())


def test_reports_the_edge_workers_metrics_while_it_runs(
    layer: tuple[MessageLayer, list[UpstreamMessage]],
    api_client: kubernetes.client.ApiClient,
    namespace: str,
    tmp_path: Path,
) -> None:
    ml, reports = layer
    kube = KubeClient(api_client, pool_size=None)
    clock = FakeClock()
    play = JointInferencePlay(period=5.0, frames_per_second=10, hard_every=5)
    lc = SimulatedLC(NODE, f"ws://127.0.0.1:{ml.port}/", kube=kube, clock=clock, plays=[play])
    lc.start()
    try:
        wait_for(lc.connected.is_set, "the LC to connect")
        edge_pod(kube, namespace, "Pending")
        ml.send(NODE, "insert", service(namespace))
        wait_for(lambda: play.services, "the service at the LC")

        def step(seconds: float) -> None:
            for _ in range(int(seconds / 0.5)):
                wait_for(clock.has_waiters, "the LC's tick")
                clock.step(0.5)
                time.sleep(0.002)

        step(12)
        assert reports == []  # the worker does not run yet
        kube.resource(PODS).patch(namespace, "ji-edge", {"status": {"phase": "Running"}},
                                  subresource="status")  # fmt: skip
        step(12)
        first = wait_for(lambda: reports[:1], "a report")[0]
        assert (first.kind, first.namespace, first.name, first.operation) == (
            "jointinferenceservice", namespace, "ji", "status"
        )  # fmt: skip
        assert first.content["phase"] == "inference"
        info = first.content["output"]["ownerInfo"]
        assert (info["inferenceNumber"], info["hardExampleNumber"]) == (50, 10)
        assert info["uploadCloudRatio"] == 0.2
        assert info["startTime"] and info["updateTime"]
        step(5)
        wait_for(lambda: len(reports) >= 2, "a second report")
        assert reports[1].content["output"]["ownerInfo"]["inferenceNumber"] == 100
        ml.send(NODE, "delete", service(namespace))
        wait_for(lambda: not play.services, "the service forgotten")
        n = len(reports)
        step(10)
        assert len(reports) == n
    finally:
        lc.stop()
