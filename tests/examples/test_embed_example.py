"""The embedding example runs its own manager with its own downstream sender."""

from __future__ import annotations

import importlib.util
import io
import json
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from kubernetes import client

ROOT = Path(__file__).resolve().parents[2]


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "my_manager", ROOT / "examples/embed/my_manager.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def wait_for(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached in time")


def test_embedded_runtime_uses_its_own_sender(
    apiserver: Any, api_client: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    example = load_example()
    kubeconfig = tmp_path / "kubeconfig"
    apiserver.write_kubeconfig(kubeconfig)
    out = io.StringIO()
    manager = example.build_manager(str(kubeconfig), out)
    manager.start()
    try:
        assert manager.features[0].name == "model-announcer"
        assert not manager.uses_message_layer
        models = client.CustomObjectsApi(api_client)
        body = {
            "apiVersion": "sedna.io/v1alpha1",
            "kind": "Model",
            "metadata": {"name": "m1", "annotations": {"example.io/edge-node": "edge-7"}},
            "spec": {"url": "/models/m1.pb", "format": "pb"},
        }
        models.create_namespaced_custom_object("sedna.io", "v1alpha1", namespace, "models", body)
        plain = {**body, "metadata": {"name": "m2"}}
        models.create_namespaced_custom_object("sedna.io", "v1alpha1", namespace, "models", plain)
        models.delete_namespaced_custom_object("sedna.io", "v1alpha1", namespace, "models", "m1")
        wait_for(lambda: out.getvalue().count("\n") >= 2)
    finally:
        manager.stop()
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    mine = [m for m in lines if m["object"]["metadata"].get("namespace") == namespace]
    assert [(m["node"], m["event"], m["object"]["metadata"]["name"]) for m in mine] == [
        ("edge-7", "insert", "m1"),
        ("edge-7", "delete", "m1"),
    ]
    # No websocket server was built: the override replaced the edge transport entirely.
    assert manager.health is None
