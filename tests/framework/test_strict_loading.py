"""Plugin mistakes stop the GM with one line and exit 2, before anything starts."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

UsePlugins = Callable[..., str]


def run_gm(
    pythonpath: str, config: dict[str, Any], tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "gm.yaml"
    path.write_text(yaml.safe_dump(config))
    return subprocess.run(
        [sys.executable, "-m", "sedna.cli", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": pythonpath},
    )


def embedded_config(tmp_path: Path, *enabled: str) -> dict[str, Any]:
    """An embedded-mode GM with only these features: a failure must precede the server."""
    off = ("incremental_learning", "dataset")
    return {
        "websocket": {"auth": "none", "port": 0, "address": "127.0.0.1"},
        "metrics": {"enabled": False},
        "features": {
            **{name: {"enabled": False} for name in off},
            **{name: {"enabled": True} for name in enabled},
        },
        "embedded": {"enabled": True, "port": 0, "stateDir": str(tmp_path / "state")},
    }


def one_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


def test_a_hook_that_is_not_a_sedna_hook(use_plugins: UsePlugins, tmp_path: Path) -> None:
    path = use_plugins("typo")
    line = one_line(run_gm(path, embedded_config(tmp_path, "typo"), tmp_path))
    assert line.startswith(
        "sedna-gm: plugin typo (sedna-typo-plugin 0.1.0): sedna_feature is not a sedna hook"
    )
    assert "sedna_features" in line  # the hooks there are, to spot the typo
    assert not (tmp_path / "state").exists()  # the embedded server never started


def test_a_hook_without_hookimpl(use_plugins: UsePlugins, tmp_path: Path) -> None:
    path = use_plugins("unmarked")
    line = one_line(run_gm(path, embedded_config(tmp_path, "unmarked"), tmp_path))
    assert line == (
        "sedna-gm: plugin unmarked (sedna-unmarked-plugin 0.1.0): sedna_features is not marked "
        "with @sedna.runtime.hookimpl, so it is never called"
    )


def test_a_feature_named_unlike_its_entry_point(use_plugins: UsePlugins, tmp_path: Path) -> None:
    path = use_plugins("misnamed")
    line = one_line(run_gm(path, embedded_config(tmp_path, "misnamed"), tmp_path))
    assert line.startswith(
        "sedna-gm: plugin misnamed: declares feature 'mis_named', but a feature's name must "
        "equal its entry point's ('misnamed')"
    )
    assert not (tmp_path / "state").exists()


def test_a_kind_that_is_neither_sedna_nor_installed(
    use_plugins: UsePlugins, apiserver: Any, tmp_path: Path
) -> None:
    path = use_plugins("alien")
    kubeconfig = tmp_path / "kubeconfig"
    apiserver.write_kubeconfig(kubeconfig)
    config = {
        **embedded_config(tmp_path, "alien"),
        "kubeConfig": str(kubeconfig),
        "embedded": {"enabled": False},
    }
    line = one_line(run_gm(path, config, tmp_path))
    assert line.startswith(
        "sedna-gm: plugin alien: feature alien names kind WidgetJob, which is neither a Sedna "
        "kind (Dataset, "
    )
    assert line.endswith("nor served by an installed CRD")


def test_a_kind_served_by_an_installed_crd_is_accepted(
    use_plugins: UsePlugins, embedded_apiserver: Any, api_client: Any
) -> None:
    from sedna.plugins import load_plugins
    from sedna.plugins.kinds import check_foreign_kinds
    from sedna.runtime import GMConfig, KubeClient

    embedded_apiserver.install_crd(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgetjobs.example.io"},
            "spec": {
                "group": "example.io",
                "scope": "Namespaced",
                "names": {"kind": "WidgetJob", "plural": "widgetjobs", "singular": "widgetjob"},
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            }
                        },
                    }
                ],
            },
        }
    )
    use_plugins("alien")
    config = GMConfig.model_validate({"features": {"alien": {"enabled": True}}})
    loaded = load_plugins(config)
    assert loaded.foreign_kinds() == [("alien", "alien", "WidgetJob")]
    check_foreign_kinds(loaded.foreign_kinds(), KubeClient(api_client))  # does not raise


def test_a_feature_declared_by_two_plugins(use_plugins: UsePlugins, tmp_path: Path) -> None:
    path = use_plugins("tiny", "twin")
    line = one_line(run_gm(path, embedded_config(tmp_path, "tiny"), tmp_path))
    assert line.startswith("sedna-gm: plugin tiny: feature tiny is declared by two plugins: ")
    assert "sedna-tiny-plugin 1.2.3 (sedna_tiny_plugin)" in line
    assert "sedna-twin-plugin 0.1.0 (sedna_twin_plugin)" in line
    assert not (tmp_path / "state").exists()


def test_a_plugin_that_fails_to_import(use_plugins: UsePlugins, tmp_path: Path) -> None:
    path = use_plugins("broken")
    line = one_line(run_gm(path, embedded_config(tmp_path, "broken"), tmp_path))
    assert line.startswith("sedna-gm: plugin broken (sedna-broken-plugin 0.0.1): cannot import")
    assert "ModuleNotFoundError" in line
    assert not (tmp_path / "state").exists()


def test_a_foreign_kind_in_embedded_mode(use_plugins: UsePlugins, tmp_path: Path) -> None:
    # The embedded server keeps CRDs applied to it in earlier runs, so it is asked too.
    path = use_plugins("alien")
    proc = run_gm(path, embedded_config(tmp_path, "alien"), tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("sedna-gm: ")]
    assert len(errors) == 1
    assert errors[0].startswith("sedna-gm: plugin alien: feature alien names kind WidgetJob")


def test_any_marked_function_must_be_a_sedna_hook() -> None:
    import pytest

    from sedna.plugins import PluginError, load_plugins
    from sedna.runtime import Feature, GMConfig, hookimpl

    class Plugin:
        @hookimpl
        def sedna_features(self) -> list[Feature]:
            return []

        @hookimpl
        def on_startup(self) -> None:  # a hook of some other framework's naming
            pass

    config = GMConfig.model_validate({"features": {}})
    with pytest.raises(PluginError) as err:
        load_plugins(config, extra_plugins={"odd": Plugin()}, use_entry_points=False)
    assert str(err.value).startswith("plugin odd: on_startup is not a sedna hook (hooks: ")

    class Renamed:
        @hookimpl(specname="sedna_features")
        def my_features(self) -> list[Feature]:
            return []

    load_plugins(config, extra_plugins={"renamed": Renamed()}, use_entry_points=False)
