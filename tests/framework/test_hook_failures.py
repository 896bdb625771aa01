"""A plugin's failing hook is reported naming the plugin, the hook and the exception's type.

At start-up (features, container, startup) that is one line and exit status 2, like
any other loading error; at shutdown every plugin still gets its call; when a pod is
adjusted, the controller's log line and Warning Event name the plugin, not only the
feature creating the pod.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml
from support.logs import capture_logs

from sedna.manager import Manager
from sedna.plugins import PluginError, load_plugins
from sedna.runtime import (
    MODELS,
    Controller,
    ControllerContext,
    Feature,
    FeatureController,
    GMConfig,
    ResourceEventHandlerFuncs,
    Result,
    hookimpl,
    meta_namespace_key,
)
from sedna.runtime.workers import WorkerParam
from sedna.startup import StartupError
from sedna.testing import wait_until

UsePlugins = Callable[..., str]


def run_cli(
    pythonpath: str, hook: str, config: dict[str, Any], tmp_path: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "gm.yaml"
    path.write_text(yaml.safe_dump(config))
    return subprocess.run(
        [sys.executable, "-m", "sedna.cli", *args, "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": pythonpath, "SEDNA_FAULTY_HOOK": hook},
    )


def gm_config(tmp_path: Path, apiserver: Any | None = None) -> dict[str, Any]:
    """Only the faulty feature, against the test API server when one is given."""
    config: dict[str, Any] = {
        "websocket": {"auth": "none", "port": 0, "address": "127.0.0.1"},
        "metrics": {"enabled": False},
        "features": {
            "incremental_learning": {"enabled": False},
            "dataset": {"enabled": False},
            "faulty": {"enabled": True},
        },
    }
    if apiserver is not None:
        kubeconfig = tmp_path / "kubeconfig"
        apiserver.write_kubeconfig(kubeconfig)
        config["kubeConfig"] = str(kubeconfig)
    return config


def error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The one `sedna-gm:` line of a run that exited with status 2 and no traceback."""
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("sedna-gm: ")]
    assert len(errors) == 1, proc.stderr
    return errors[0]


@pytest.mark.parametrize("command", [(), ("rbac",)], ids=["run", "rbac"])
def test_sedna_features_raising_names_the_plugin(
    use_plugins: UsePlugins, tmp_path: Path, command: tuple[str, ...]
) -> None:
    path = use_plugins("faulty")
    proc = run_cli(path, "features", gm_config(tmp_path), tmp_path, *command)
    assert error_line(proc) == (
        "sedna-gm: plugin faulty: sedna_features failed: RuntimeError: features boom"
    )


@pytest.mark.parametrize("command", [(), ("rbac",)], ids=["run", "rbac"])
def test_sedna_features_returning_none_names_the_plugin(
    use_plugins: UsePlugins, tmp_path: Path, command: tuple[str, ...]
) -> None:
    path = use_plugins("faulty")
    proc = run_cli(path, "features-none", gm_config(tmp_path), tmp_path, *command)
    assert error_line(proc) == (
        "sedna-gm: plugin faulty: sedna_features failed: returned NoneType, expected a "
        "sequence of sedna.runtime.Feature (an empty one for no features)"
    )


@pytest.mark.parametrize(
    ("hook", "line"),
    [
        ("configure", "sedna_configure_container failed: ValueError: configure boom"),
        ("startup", "sedna_startup failed: KeyError: 'startup boom'"),
    ],
    ids=["configure_container", "startup"],
)
def test_a_startup_hook_raising_is_a_startup_error(
    use_plugins: UsePlugins, apiserver: Any, tmp_path: Path, hook: str, line: str
) -> None:
    path = use_plugins("faulty")
    proc = run_cli(path, hook, gm_config(tmp_path, apiserver), tmp_path)
    assert error_line(proc) == f"sedna-gm: plugin faulty: {line}"


def test_a_plugin_hook_wrapper_is_refused() -> None:
    class Wrapping:
        @hookimpl(wrapper=True)
        def sedna_startup(self, context: ControllerContext) -> Any:
            return (yield)

    config = GMConfig.model_validate({"features": {}})
    with pytest.raises(PluginError) as err:
        load_plugins(config, extra_plugins={"wrapping": Wrapping()}, use_entry_points=False)
    assert str(err.value) == (
        "plugin wrapping: sedna_startup is a hook wrapper; sedna hooks take none"
    )


# -- in process: shutdown and pod adjustment -------------------------------------------


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


@pytest.fixture
def kubeconfig(apiserver: Any, tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    apiserver.write_kubeconfig(path)
    return path


class Stopping:
    """Records its shutdown call; raises in it when `fails`."""

    def __init__(self, calls: list[str], name: str, fails: bool) -> None:
        self.calls, self.name, self.fails = calls, name, fails

    @hookimpl
    def sedna_shutdown(self, context: ControllerContext) -> None:
        self.calls.append(self.name)
        if self.fails:
            raise RuntimeError(f"{self.name} cannot close")


def test_every_plugin_gets_its_shutdown_call(kubeconfig: Path) -> None:
    calls: list[str] = []
    plugins = {
        "first": Stopping(calls, "first", fails=True),
        "second": Stopping(calls, "second", fails=False),
        "third": Stopping(calls, "third", fails=True),
    }
    manager = Manager(manager_config(kubeconfig), extra_plugins=plugins, use_entry_points=False)
    manager.start()
    for cap in capture_logs():
        manager.stop()
        assert sorted(calls) == ["first", "second", "third"]
        for name in ("first", "third"):
            assert cap.contains(
                f"plugin {name}: sedna_shutdown failed: RuntimeError: {name} cannot close"
            ), cap.lines
        assert not cap.contains("plugin second: sedna_shutdown failed")


class PodMaker(Controller):
    """Creates one pod per Model, the way a feature creates its workers."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.informer = ctx.informers.informer(MODELS)
        super().__init__("podmaker", clock=ctx.clock, events=ctx.events, informer=self.informer)
        self.informer.add_event_handler(
            ResourceEventHandlerFuncs(add=lambda obj: self.enqueue(meta_namespace_key(obj)))
        )

    def sync(self, key: str) -> Result | None:
        model = self.informer.lister.get_by_key(key)
        if model is None:
            return None
        job = {**model, "kind": "Model", "apiVersion": "sedna.io/v1alpha1"}
        template = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        self.ctx.worker_runtime.create_pod_with_template(
            job, template, WorkerParam(worker_type="Train")
        )
        return None

    def start(self) -> None:
        self.run()


class PodMakerPlugin:
    @hookimpl
    def sedna_features(self) -> list[Feature]:
        def build(ctx: ControllerContext) -> FeatureController:
            return PodMaker(ctx)

        return [Feature("podmaker", ["Model"], build)]


class StrictPlugin:
    @hookimpl
    def sedna_adjust_pod(
        self, pod: dict[str, Any], job: Mapping[str, Any], worker_type: str
    ) -> None:
        raise RuntimeError("adjust boom")


def test_a_failing_pod_adjustment_names_the_plugin(
    kubeconfig: Path, api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    manager = Manager(
        manager_config(kubeconfig),
        extra_plugins={"podmaker": PodMakerPlugin(), "strict": StrictPlugin()},
        use_entry_points=False,
    )
    blamed = "plugin strict: sedna_adjust_pod failed: RuntimeError: adjust boom"
    core = kubernetes.client.CoreV1Api(api_client)
    for cap in capture_logs():
        manager.start()
        try:
            kubernetes.client.CustomObjectsApi(api_client).create_namespaced_custom_object(
                "sedna.io",
                "v1alpha1",
                namespace,
                "models",
                {
                    "apiVersion": "sedna.io/v1alpha1",
                    "kind": "Model",
                    "metadata": {"name": "m"},
                    "spec": {"url": "s3://b/m.pb", "format": "pb"},
                },
            )
            cap.wait("controller podmaker", blamed)

            def warned() -> list[str]:
                events = core.list_namespaced_event(namespace).items
                return [e.message for e in events if e.reason == "SyncError"]

            assert wait_until(lambda: warned() != [], 5.0, "a SyncError Event")
            assert warned() == [f"sync failed: HookError: {blamed}; retrying"]
            assert core.list_namespaced_pod(namespace).items == []  # nothing was created
        finally:
            manager.stop()


class Starting:
    """Records its startup and shutdown calls; its startup raises when `fails`."""

    def __init__(self, calls: list[str], name: str, fails: bool = False) -> None:
        self.calls, self.name, self.fails = calls, name, fails

    @hookimpl
    def sedna_startup(self, context: ControllerContext) -> None:
        self.calls.append(f"startup {self.name}")
        if self.fails:
            raise RuntimeError(f"{self.name} cannot start")

    @hookimpl
    def sedna_shutdown(self, context: ControllerContext) -> None:
        self.calls.append(f"shutdown {self.name}")


def test_a_failed_startup_hook_still_closes_the_plugins_that_started(kubeconfig: Path) -> None:
    """Plugins whose startup ran get their shutdown; the failing one and those after it
    do not; a plugin with no startup hook is closed as after any start."""
    calls: list[str] = []
    plugins = {
        # pluggy calls the last registered first
        "late": Starting(calls, "late"),
        "boom": Starting(calls, "boom", fails=True),
        "early": Starting(calls, "early"),
        "plain": Stopping(calls, "plain", fails=False),
    }
    manager = Manager(manager_config(kubeconfig), extra_plugins=plugins, use_entry_points=False)
    with pytest.raises(StartupError, match="plugin boom: sedna_startup failed: RuntimeError"):
        manager.start()
    # the failed start stopped what it had started
    assert calls[:2] == ["startup early", "startup boom"]
    assert sorted(calls[2:]) == ["plain", "shutdown early"]
    manager.stop()  # a later stop calls nobody again
    assert len(calls) == 4
