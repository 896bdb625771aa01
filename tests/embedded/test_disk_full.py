"""Embedded mode on a full disk: the GM says it is not ready, and once space returns it
is ready again and the simulated kubelet carries out the step it was refused, without
a restart.

The disk fills below the API, in the embedded store's SQLite layer
(`APIServer.store_faults`); the GM, the simulated kubelet and LC see only 500s.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from loguru import logger

from sedna.embedded.mode import EmbeddedMode
from sedna.manager import Manager
from sedna.runtime.config import GMConfig
from sedna.runtime.kube import (
    INCREMENTAL_LEARNING_JOBS,
    PODS,
    KubeClient,
    api_client_from_config,
)
from sedna.testing import wait_until

PROJECT = Path(__file__).resolve().parents[2]
EXAMPLE = PROJECT / "examples" / "incremental-learning"
JOB = "helmet-detection-demo"

pytestmark = pytest.mark.timeout(240)


def _config(state: Path) -> GMConfig:
    from sedna.plugins.loader import discover_plugins

    features: dict[str, Any] = {p.name: {"enabled": False} for p in discover_plugins()}
    features["incremental_learning"] = {"enabled": True, "workers": 2}
    features["dataset"] = {"enabled": True}
    return GMConfig.model_validate(
        {
            "websocket": {"address": "127.0.0.1", "port": 0, "auth": "node"},
            "metrics": {"address": "127.0.0.1", "port": 0, "auth": "none"},
            "features": features,
            "embedded": {
                "enabled": True,
                "port": 0,
                "stateDir": str(state),
                "apply": [str(EXAMPLE)],
                "simulate": {
                    "nodes": ["edge-node", "cloud-node"],
                    "podStartSeconds": 1.0,
                    "podRunSeconds": 1.0,
                },
            },
        }
    )


class Running:
    def __init__(self, state: Path) -> None:
        self.mode = EmbeddedMode(_config(state))
        config = self.mode.prepare()
        self.manager = Manager(config, cache_sync_timeout=20)
        self.manager.start()
        self.mode.start_simulation(self.manager)
        self.client = api_client_from_config(config.kubeConfig, "")
        self.kube = KubeClient(self.client, pool_size=None)
        assert self.mode.server is not None
        self.server = self.mode.server
        self.server.store.health.probe_interval = 0.05

    def readyz(self) -> tuple[int, str]:
        assert self.manager.health is not None
        url = f"http://127.0.0.1:{self.manager.health.port}/readyz"
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                return int(resp.status), resp.read().decode()
        except urllib.error.HTTPError as err:
            return int(err.code), err.read().decode()

    def stop(self) -> None:
        self.client.close()
        self.mode.request_stop()
        self.manager.request_stop("test done")
        self.manager.stop()
        self.mode.stop()


@pytest.fixture()
def running(tmp_path: Path) -> Iterator[Running]:
    r = Running(tmp_path / "state")
    try:
        yield r
    finally:
        r.stop()


def test_the_demo_resumes_after_the_disk_had_no_room(running: Running) -> None:
    lines: list[str] = []
    sink = logger.add(lambda m: lines.append(str(m)), level="INFO")
    try:
        _fill_and_free(running, lines)
    finally:
        logger.remove(sink)


def _pending_train_pod(running: Running) -> bool:
    label = "incrementallearningjob.sedna.io"
    selector = f"{label}/name={JOB},{label}/worker-type=train"
    pods = running.kube.resource(PODS).list("default", label_selector=selector)["items"]
    return any(p["status"].get("phase") == "Pending" for p in pods)


def _fill_and_free(running: Running, lines: list[str]) -> None:
    wait_until(lambda: running.readyz()[0] == 200, timeout=30, what="the GM ready")
    # the disk fills while a train pod waits for its kubelet to start it
    wait_until(lambda: _pending_train_pod(running), 60, "a train pod Pending")
    running.server.store_faults.fail_writes()
    wait_until(
        lambda: any("kubelet: pod" in ln and "status write failed" in ln for ln in lines),
        30,
        "the kubelet refused",
    )
    code, text = running.readyz()
    assert code == 503 and "[-]embedded-store failed" in text and "disk is full" in text, text
    running.server.store_faults.fail_writes(None)
    wait_until(lambda: running.readyz()[0] == 200, timeout=30, what="the GM ready again")
    # the kubelet's refused step runs again: the pod it was starting leaves Pending
    wait_until(
        lambda: not _pending_train_pod(running),
        timeout=60,
        what="the train pod started after the disk had room again",
    )
    # and the job goes on: the GM records its train worker Running
    wait_until(
        lambda: "Train/Running" in _states(running),
        timeout=60,
        what="the job's Train/Running after the disk had room again",
    )


def _states(running: Running) -> list[str]:
    job = running.kube.resource(INCREMENTAL_LEARNING_JOBS).get("default", JOB)
    conds = (job.get("status") or {}).get("conditions") or []
    return [f"{c.get('stage')}/{c.get('type')}" for c in conds]
