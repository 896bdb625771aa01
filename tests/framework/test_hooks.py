"""Every hookspec is documented and tested (as datasette checks its hooks)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers

from sedna.manager import Manager
from sedna.plugins import hookspecs
from sedna.runtime import ControllerContext, Feature, RuntimeContainer, hookimpl
from sedna.runtime.config import GMConfig
from sedna.runtime.workers import WorkerParam

ROOT = Path(__file__).resolve().parents[2]
HOOKS = sorted(
    name
    for name, _ in inspect.getmembers(hookspecs, inspect.isfunction)
    if name.startswith("sedna_")
)


def test_hook_names_are_found() -> None:
    assert HOOKS == [
        "sedna_adjust_pod",
        "sedna_configure_container",
        "sedna_features",
        "sedna_shutdown",
        "sedna_startup",
    ]


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hookspec_is_documented(hook: str) -> None:
    assert (getattr(hookspecs, hook).__doc__ or "").strip(), f"{hook} has no docstring"
    doc = (ROOT / "docs" / "plugin-hooks.md").read_text()
    assert re.search(rf"^## {hook}$", doc, re.M), f"{hook} missing from docs/plugin-hooks.md"


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hookspec_has_a_test(hook: str) -> None:
    assert callable(globals().get(f"test_hook_{hook}")), f"no test_hook_{hook} in {__file__}"


def manager_config(kubeconfig: Path, **features: Any) -> GMConfig:
    return GMConfig.model_validate(
        {
            "kubeConfig": str(kubeconfig),
            "websocket": {"auth": "none", "port": 0, "address": "127.0.0.1"},
            "metrics": {"enabled": False},
            "minResyncPeriodSeconds": 300,
            "features": features,
        }
    )


class Recorder:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        Recorder.last = self

    last: Recorder | None = None

    def start(self) -> None:
        self.ctx.send("edge-1", "insert", {"kind": "DemoJob", "metadata": {"name": "a"}})

    def stop(self) -> None:
        pass


class DemoPlugin:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.sent: list[tuple[str, str, Mapping[str, Any]]] = []

    @hookimpl
    def sedna_features(self) -> list[Feature]:
        return [Feature("demo", ["Model"], Recorder)]

    @hookimpl
    def sedna_configure_container(self, container: RuntimeContainer) -> None:
        self.calls.append("configure")

        def send(node: str, event: str, obj: Mapping[str, Any]) -> None:
            self.sent.append((node, event, obj))

        container.downstream.override(providers.Object(send))

    @hookimpl
    def sedna_startup(self, context: ControllerContext) -> None:
        self.calls.append(f"startup:{context.feature_name!r}")

    @hookimpl
    def sedna_shutdown(self, context: ControllerContext) -> None:
        self.calls.append("shutdown")


@pytest.fixture
def kubeconfig(apiserver: Any, tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    apiserver.write_kubeconfig(path)
    return path


def run_demo(kubeconfig: Path) -> DemoPlugin:
    plugin = DemoPlugin()
    manager = Manager(
        manager_config(kubeconfig), extra_plugins={"demo": plugin}, use_entry_points=False
    )
    manager.start()
    try:
        assert plugin.calls == ["configure", "startup:''"]
        assert manager.context().feature_name == ""
    finally:
        manager.stop()
    return plugin


def test_hook_sedna_features(kubeconfig: Path) -> None:
    run_demo(kubeconfig)
    assert Recorder.last is not None
    assert Recorder.last.ctx.feature_name == "demo"
    assert Recorder.last.ctx.workers == 1


def test_hook_sedna_configure_container(kubeconfig: Path) -> None:
    plugin = run_demo(kubeconfig)
    assert plugin.sent == [("edge-1", "insert", {"kind": "DemoJob", "metadata": {"name": "a"}})]


def test_hook_sedna_startup(kubeconfig: Path) -> None:
    assert "startup:''" in run_demo(kubeconfig).calls


def test_hook_sedna_shutdown(kubeconfig: Path) -> None:
    assert run_demo(kubeconfig).calls[-1] == "shutdown"


class TolerationPlugin:
    @hookimpl
    def sedna_adjust_pod(
        self, pod: dict[str, Any], job: Mapping[str, Any], worker_type: str
    ) -> None:
        pod["spec"].setdefault("tolerations", []).append(
            {"key": "edge", "operator": "Exists", "effect": "NoSchedule"}
        )
        pod["metadata"].setdefault("labels", {})["adjusted-for"] = worker_type


def test_hook_sedna_adjust_pod(kubeconfig: Path, namespace: str) -> None:
    manager = Manager(
        manager_config(kubeconfig),
        extra_plugins={"tolerate": TolerationPlugin()},
        use_entry_points=False,
    )
    manager.start()
    try:
        job = {
            "apiVersion": "sedna.io/v1alpha1",
            "kind": "IncrementalLearningJob",
            "metadata": {"name": "j", "namespace": namespace, "uid": "u-1"},
        }
        template = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        pod = manager.context().worker_runtime.create_pod_with_template(
            job, template, WorkerParam(worker_type="Train")
        )
    finally:
        manager.stop()
    assert pod["spec"]["tolerations"] == [
        {"key": "edge", "operator": "Exists", "effect": "NoSchedule"}
    ]
    assert pod["metadata"]["labels"]["adjusted-for"] == "train"
