"""`embedded.simulate.externalLC`: a kubelet stand-in for a node whose LC is a real one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from loguru import logger

from sedna.embedded.mode import EmbeddedMode
from sedna.manager import Manager
from sedna.plugins.loader import discover_plugins
from sedna.runtime.config import ConfigError, GMConfig, load_config
from sedna.runtime.kube import INCREMENTAL_LEARNING_JOBS, PODS
from sedna.testing import StagedJobLC, wait_until

PROJECT = Path(__file__).resolve().parents[2]
EXAMPLE = PROJECT / "examples" / "incremental-learning"
JOB = "helmet-detection-demo"
NS = "default"


class RealLC(StagedJobLC):
    """Stands for the external LC (Sedna's sends no token: the GM runs auth: none)."""

    kind = "incrementallearningjob"
    job = JOB


def _config(state: Path) -> GMConfig:
    features: dict[str, Any] = {p.name: {"enabled": False} for p in discover_plugins()}
    features["incremental_learning"] = {"enabled": True}
    features["dataset"] = {"enabled": True}
    return GMConfig.model_validate({
        "websocket": {"address": "127.0.0.1", "port": 0, "auth": "none"},
        "metrics": {"enabled": False},
        "features": features,
        "embedded": {
            "enabled": True, "port": 0, "stateDir": str(state), "apply": [str(EXAMPLE)],
            # the worker keeps running: only the LC's report may end its stage
            "simulate": {"nodes": ["edge-node", "edge-b"], "externalLC": ["edge-node"],
                         "podRunSeconds": 3600},
        },
    })  # fmt: skip


@pytest.fixture()
def embedded(tmp_path: Path) -> Iterator[tuple[EmbeddedMode, Manager]]:
    mode = EmbeddedMode(_config(tmp_path / "state"))
    manager: Manager | None = None
    try:
        manager = Manager(mode.prepare(), cache_sync_timeout=10)
        manager.start()
        mode.start_simulation(manager)
        yield mode, manager
    finally:
        if manager is not None:
            manager.stop()
        mode.stop()


def _latest(mode: EmbeddedMode) -> str:
    assert mode.kube is not None
    job = mode.kube.resource(INCREMENTAL_LEARNING_JOBS).get(NS, JOB)
    conds = (job.get("status") or {}).get("conditions") or []
    return f"{conds[-1]['stage']}/{conds[-1]['type']}" if conds else ""


def test_a_node_with_an_external_lc_gets_a_kubelet_and_no_simulated_lc(
    embedded: tuple[EmbeddedMode, Manager],
) -> None:
    mode, manager = embedded
    assert sorted(k.node for k in mode.kubelets) == ["edge-b", "edge-node"]
    assert [lc.node for lc in mode.lcs] == ["edge-b"]
    wait_until(lambda: _latest(mode) == "Train/Waiting", 10, "the job at Train/Waiting")

    # Nobody answers for edge-node until its LC connects: it drives the cycle.
    lc = RealLC(port=int(manager.container.message_layer().port), node="edge-node")
    try:
        lc.wait_job_state("Train/Waiting", timeout=10)
        base = {"format": "pb", "url": "/models/base_model"}
        lc.report(NS, "train", "ready", input={
            "models": [base], "dataURL": "/output/data/train/1/data.txt",
            "outputDir": "/output/train/1",
        })  # fmt: skip
        wait_until(lambda: _latest(mode) == "Train/Running", 10, "the kubelet to run the worker")
        assert mode.kube is not None
        pods = mode.kube.resource(PODS).list(NS)["items"]
        train = [p for p in pods if p["metadata"]["name"].startswith(f"{JOB}-train-")]
        assert [p["spec"]["nodeName"] for p in train] == ["edge-node"]
        trained = {"format": "pb", "url": "/output/train/1/model.pb"}
        lc.report(NS, "train", "completed", output={"models": [trained], "ownerInfo": None})
        wait_until(lambda: _latest(mode) == "Eval/Waiting", 10, "the job at Eval/Waiting")
        job = mode.kube.resource(INCREMENTAL_LEARNING_JOBS).get(NS, JOB)
        done = [c for c in job["status"]["conditions"] if c["type"] == "Completed"]
        models = json.loads(done[-1]["data"])["output"]["models"]
        assert [m["url"] for m in models] == [trained["url"]]
    finally:
        lc.close()


@pytest.mark.parametrize(
    ("simulate", "message"),
    [
        ({"nodes": ["a"], "externalLC": ["b"]}, "externalLC: 'b' is not one of"),
        ({"nodes": ["a"], "externalLC": ["a", "a"]}, "externalLC: 'a' is listed twice"),
        ({"nodes": ["a"], "externalLC": "a"}, "externalLC: expected a list"),
        ({"jobTickSeconds": 0}, "jobTickSeconds: Input should be greater than 0"),
        ({"datasetPollSeconds": "soon"}, "datasetPollSeconds: expected a number"),
    ],
)
def test_bad_simulate_options_name_the_field(
    tmp_path: Path, simulate: dict[str, Any], message: str
) -> None:
    path = tmp_path / "gm.yaml"
    path.write_text(json.dumps({"embedded": {"enabled": True, "simulate": simulate}}))
    with pytest.raises(ConfigError, match=rf"gm.yaml: embedded\.simulate\.{message}"):
        load_config(path)


def test_the_real_lc_example_config_runs_edge_node_with_an_external_lc() -> None:
    config = load_config(PROJECT / "examples" / "real-lc" / "gm.yaml")
    assert config.embedded.simulate.externalLC == ["edge-node"]
    assert config.websocket.auth == "none" and config.websocket.address == "127.0.0.1"
    assert [Path(p).resolve() for p in config.embedded.apply] == [EXAMPLE]


def test_an_external_lc_behind_token_auth_gets_a_warning(tmp_path: Path) -> None:
    # Sedna's LC sends no token: with auth node it could never connect.
    config = _config(tmp_path / "state").model_copy(deep=True)
    config.websocket.auth = "node"
    config.websocket.port = 1  # the URL the LCs would dial; no simulated LC dials it
    config.embedded.simulate.nodes = ["edge-node"]
    mode = EmbeddedMode(config)
    lines: list[str] = []
    sink = logger.add(lambda m: lines.append(str(m)), level="WARNING")
    try:
        mode.prepare()
        mode.start_simulation(None)
        assert mode.lcs == [] and [k.node for k in mode.kubelets] == ["edge-node"]
        assert any("Sedna's LC sends no token" in line and "auth node" in line for line in lines)
    finally:
        logger.remove(sink)
        mode.stop()
