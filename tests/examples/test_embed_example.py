"""The embedding example, run as its README says: `sedna-gm apiserver`, then the manager."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from sedna.runtime import MODELS, KubeClient, api_client_from_config
from sedna.testing import poll

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples/embed/my_manager.py"


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("my_manager", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def model(name: str, node: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if node:
        meta["annotations"] = {"example.io/edge-node": node}
    return {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "Model",
        "metadata": meta,
        "spec": {"url": f"/models/{name}.pb", "format": "pb"},
    }


@pytest.fixture
def standalone_apiserver(tmp_path: Path) -> Iterator[Path]:
    """`sedna-gm apiserver` as a user runs it; yields its kubeconfig."""
    kubeconfig = tmp_path / "kubeconfig"
    cmd = [sys.executable, "-m", "sedna.cli", "apiserver", "--port", "0"]
    proc = subprocess.Popen(
        [*cmd, "--kubeconfig", str(kubeconfig)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the server announces itself once it is ready
        assert line.startswith("sedna-gm: API server listening on http://127.0.0.1:"), line
        assert kubeconfig.exists()
        yield kubeconfig
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0


def test_the_example_runs_against_sedna_gm_apiserver(
    standalone_apiserver: Path, tmp_path: Path
) -> None:
    out = tmp_path / "messages.jsonl"
    cmd = [sys.executable, str(EXAMPLE), "--kubeconfig", str(standalone_apiserver)]
    manager = subprocess.Popen(
        [*cmd, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        models = KubeClient(api_client_from_config(str(standalone_apiserver), "")).resource(MODELS)
        models.create("default", model("m1", "edge-7"))
        models.create("default", model("m2", None))
        poll(
            lambda: out.exists() and out.read_text().count("\n") >= 1,
            20.0,
            interval=0.05,
            failure="the manager never sent m1",
        )
        models.delete("default", "m1")
        poll(
            lambda: out.read_text().count("\n") >= 2,
            10.0,
            interval=0.05,
            failure="the manager never sent m1's delete",
        )
    finally:
        manager.send_signal(signal.SIGTERM)
        log, _ = manager.communicate(timeout=20)
    assert manager.returncode == 0, log
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(m["node"], m["event"], m["object"]["metadata"]["name"]) for m in lines] == [
        ("edge-7", "insert", "m1"),
        ("edge-7", "delete", "m1"),
    ]


def test_the_example_uses_its_own_sender_and_no_websocket_server(
    apiserver: Any, tmp_path: Path
) -> None:
    example = load_example()
    kubeconfig = tmp_path / "kubeconfig"
    apiserver.write_kubeconfig(kubeconfig)
    host = example.build_host(str(kubeconfig), io.StringIO())
    with host:
        assert [f.name for f in host.features] == ["model-announcer"]
        assert not host.uses_message_layer
        assert host.context("model-announcer").feature_name == "model-announcer"


def test_the_example_imports_only_sedna_runtime() -> None:
    imports = [
        line.split()[1]
        for line in EXAMPLE.read_text().splitlines()
        if line.startswith(("import ", "from "))
    ]
    assert [m for m in imports if m.startswith("sedna")] == ["sedna.runtime"]


def test_sedna_gm_apiserver_listens_on_loopback_only() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "sedna.cli", "apiserver", "--address", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert proc.stderr == (
        "sedna-gm: apiserver: --address 0.0.0.0: only loopback addresses are allowed\n"
    )
