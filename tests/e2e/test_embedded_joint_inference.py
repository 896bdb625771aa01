"""`sedna-gm --config config/gm.yaml` runs the joint-inference example next to the IL one.

As a user sees it: the service becomes Running (in the log and in its status), its two
Deployments get a pod each and are available, the simulated LC's metrics land in
`status.metrics`; after a restart on the same stateDir nothing is created twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sedna.runtime.kube import DEPLOYMENTS, PODS, KubeClient, sedna_resource

from .gm_process import GMProcess, write_config

NS = "default"
NAME = "helmet-detection-inference-example"
JIS = sedna_resource("jointinferenceservices")

pytestmark = pytest.mark.timeout(120)


@pytest.fixture()
def gm(tmp_path: Path) -> Iterator[GMProcess]:
    proc = GMProcess(write_config(tmp_path))
    try:
        yield proc
    finally:
        proc.stop()


def status(kube: KubeClient) -> dict[str, Any]:
    return dict(kube.resource(JIS).get(NS, NAME).get("status") or {})


def owned(kube: KubeClient) -> dict[str, str]:
    out = {}
    for res in (DEPLOYMENTS, PODS):
        for o in kube.resource(res).list(NS)["items"]:
            if o["metadata"]["name"].startswith(f"{NAME}-deployment-"):
                out[o["metadata"]["name"]] = o["metadata"]["uid"]
    return out


def test_the_service_runs_reports_metrics_and_survives_a_restart(gm: GMProcess) -> None:
    gm.start()
    kube = gm.connect()
    gm.wait_for(
        lambda: (status(kube).get("conditions") or [{}])[-1].get("type") == "Running",
        "the service Running",
        30,
    )
    assert "Failed" not in [c["type"] for c in status(kube)["conditions"]]
    gm.wait_for(
        lambda: (
            "joint inference service default/helmet-detection-inference-example: "
            "condition Pending -> Running" in gm.log.read_text()
        ),
        "the Running log line",
        10,
    )
    deps = {d["metadata"]["name"]: d for d in kube.resource(DEPLOYMENTS).list(NS)["items"]}
    for wtype in ("cloud", "edge"):
        d = deps[f"{NAME}-deployment-{wtype}"]
        assert d["status"]["availableReplicas"] == 1
    metrics = gm.wait_for(lambda: status(kube).get("metrics"), "metrics from the LC", 30)
    assert {m["key"] for m in metrics} == {"inferenceNumber", "hardExampleNumber",
                                           "uploadCloudRatio"}  # fmt: skip
    before = owned(kube)
    assert len(before) == 4, before  # two Deployments, one pod each
    assert gm.stop() == 0, f"unclean exit; log tail:\n{gm.tail()}"

    gm.start()
    kube = gm.connect()
    gm.wait_for(lambda: kube.resource(JIS).get(NS, NAME), "the service after the restart", 30)
    gm.wait_for(
        lambda: (
            "edge-node/lc: joint inference service default/"
            "helmet-detection-inference-example received" in gm.tail(400)
        ),
        "the service sent to the LC again",
        30,
    )
    assert owned(kube) == before
    assert [c["type"] for c in status(kube)["conditions"]] == ["Pending", "Running"]
