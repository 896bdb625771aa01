"""Plugins come only through entry points of installed distributions."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from sedna.plugins import PluginError, discover_plugins, load_plugins
from sedna.runtime.config import GMConfig

UsePlugins = Callable[..., str]


def only(*enabled: str, **options: dict[str, Any]) -> GMConfig:
    """A config enabling exactly these plugins among those installed now."""
    features: dict[str, Any] = {p.name: {"enabled": False} for p in discover_plugins()}
    for name in enabled:
        features[name] = {"enabled": True, **options.get(name, {})}
    return GMConfig.model_validate({"features": features})


def test_discovers_a_real_installed_distribution(use_plugins: UsePlugins) -> None:
    use_plugins("tiny")
    found = {p.name: p for p in discover_plugins()}
    assert found["tiny"].distribution == "sedna-tiny-plugin"
    assert found["tiny"].version == "1.2.3"
    assert found["tiny"].value == "sedna_tiny_plugin"


def test_enabled_feature_is_loaded_with_validated_options(use_plugins: UsePlugins) -> None:
    use_plugins("tiny")
    loaded = load_plugins(only("tiny", tiny={"greeting": "hi", "workers": 3}))
    feature = loaded.feature("tiny")
    assert feature.plugin == "tiny"
    assert feature.workers == 3
    assert feature.options.greeting == "hi"
    assert list(feature.feature.kinds) == ["TinyJob"]


def test_disabled_plugin_is_never_imported(
    use_plugins: UsePlugins, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_plugins("tiny", "marker")
    mark = tmp_path / "mark"
    monkeypatch.setenv("SEDNA_MARKER_FILE", str(mark))
    loaded = load_plugins(only("tiny"))
    assert "sedna_marker_plugin" not in sys.modules
    assert not mark.exists()
    assert [f.feature.name for f in loaded.features] == ["tiny"]
    assert loaded.hooks.plugin_manager.is_blocked("marker")
    load_plugins(only("tiny", "marker"))
    assert mark.read_text() == "imported"


def test_broken_plugin_names_plugin_and_reason(use_plugins: UsePlugins) -> None:
    use_plugins("broken")
    with pytest.raises(PluginError) as err:
        load_plugins(only("broken"))
    text = str(err.value)
    assert text.startswith("plugin broken (sedna-broken-plugin 0.0.1): cannot import")
    assert "sedna_no_such_dependency" in text


def test_broken_but_disabled_plugin_does_not_matter(use_plugins: UsePlugins) -> None:
    use_plugins("broken", "tiny")
    assert [f.feature.name for f in load_plugins(only("tiny")).features] == ["tiny"]


def test_invalid_options_name_plugin_and_key(use_plugins: UsePlugins) -> None:
    use_plugins("tiny")
    with pytest.raises(PluginError) as err:
        load_plugins(only("tiny", tiny={"repeat": "often"}), source="gm.yaml")
    assert str(err.value) == (
        'gm.yaml: features.tiny.repeat: expected an integer, got "often" (plugin tiny)'
    )
    with pytest.raises(PluginError, match=r"features\.tiny\.colour: unknown key \(plugin tiny\)"):
        load_plugins(only("tiny", tiny={"colour": "red"}))


def test_a_validator_raising_something_else_names_its_type() -> None:
    from sedna.runtime import Feature, hookimpl

    def validate(options: Mapping[str, Any]) -> Any:
        return options["x"]  # a validator's own bug: KeyError, whose str is only "'x'"

    class Picky:
        @hookimpl
        def sedna_features(self) -> list[Feature]:
            return [Feature("picky", [], lambda ctx: None, validate_options=validate)]

    config = GMConfig.model_validate({"features": {"picky": {"enabled": True}}})
    with pytest.raises(PluginError) as err:
        load_plugins(config, extra_plugins={"picky": Picky()}, use_entry_points=False)
    assert (
        str(err.value)
        == "gm.yaml: features.picky: plugin picky rejected its options: KeyError: 'x'"
    )


def test_options_for_a_plugin_without_options_are_an_error(use_plugins: UsePlugins) -> None:
    use_plugins("marker")
    with pytest.raises(PluginError, match=r"features\.marker\.x: unknown option"):
        load_plugins(only("marker", marker={"x": 1}))


def test_two_plugins_claiming_one_kind(use_plugins: UsePlugins) -> None:
    use_plugins("tiny", "dup")
    with pytest.raises(PluginError) as err:
        load_plugins(only("tiny", "dup"))
    assert "claims kind TinyJob, already claimed by feature" in str(err.value)


def test_unknown_feature_in_config(use_plugins: UsePlugins) -> None:
    use_plugins("tiny")
    cfg = GMConfig.model_validate({"features": {"tinny": {"enabled": True}}})
    with pytest.raises(PluginError, match=r"gm\.yaml: features\.tinny: no installed plugin"):
        load_plugins(cfg)


def run_cli(
    pythonpath: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYTHONPATH": pythonpath, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "sedna.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=full_env,
    )


def test_cli_plugins_lists_distribution_version_kinds_and_state(
    use_plugins: UsePlugins, tmp_path: Path
) -> None:
    path = use_plugins("tiny", "broken")
    cfg = tmp_path / "gm.yaml"
    cfg.write_text("features:\n  broken:\n    enabled: false\n")
    proc = run_cli(path, "plugins", "--config", str(cfg))
    assert proc.returncode == 0, proc.stderr
    plugin_table = proc.stdout.split("\n\n")[0]
    rows = {line.split()[0]: line.split() for line in plugin_table.splitlines()[1:]}
    assert rows["tiny"][:5] == ["tiny", "sedna-tiny-plugin", "1.2.3", "TinyJob", "yes"]
    assert rows["broken"][:3] == ["broken", "sedna-broken-plugin", "0.0.1"]
    assert rows["broken"][-1] == "no"
    assert "error: ModuleNotFoundError" in proc.stdout


def test_cli_check_config_prints_effective_config(use_plugins: UsePlugins, tmp_path: Path) -> None:
    path = use_plugins("tiny")
    cfg = tmp_path / "gm.yaml"
    cfg.write_text("websocket:\n  port: 9100\nfeatures:\n  tiny:\n    greeting: hey\n")
    proc = run_cli(
        path, "check-config", "--config", str(cfg), env={"SEDNA_GM_WEBSOCKET_ADDRESS": "127.0.0.1"}
    )
    assert proc.returncode == 0, proc.stderr
    import yaml

    doc = yaml.safe_load(proc.stdout)
    assert doc["websocket"]["port"] == 9100
    assert doc["websocket"]["address"] == "127.0.0.1"
    assert doc["features"]["tiny"] == {"enabled": True, "workers": 1, "greeting": "hey"}
    assert doc["minResyncPeriodSeconds"] == 30


def test_cli_check_config_reports_plugin_option_errors(
    use_plugins: UsePlugins, tmp_path: Path
) -> None:
    path = use_plugins("tiny")
    cfg = tmp_path / "gm.yaml"
    cfg.write_text("features:\n  tiny:\n    repeat: x\n")
    proc = run_cli(path, "check-config", "--config", str(cfg))
    assert proc.returncode == 2
    assert proc.stderr == (
        f'sedna-gm: {cfg}: features.tiny.repeat: expected an integer, got "x" (plugin tiny)\n'
    )


def test_cli_version() -> None:
    proc = run_cli("", "--version")
    assert proc.returncode == 0
    assert proc.stdout.startswith("sedna-gm ")


def test_cli_run_with_a_broken_enabled_plugin_exits_2(
    use_plugins: UsePlugins, tmp_path: Path
) -> None:
    path = use_plugins("broken")
    cfg = tmp_path / "gm.yaml"
    cfg.write_text("features:\n  broken:\n    enabled: true\n")
    proc = run_cli(path, "--config", str(cfg))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("sedna-gm: plugin broken (sedna-broken-plugin 0.0.1): cannot import")
    assert "Traceback" not in proc.stderr


def test_loading_reads_the_installed_entry_points_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each pass reads every installed distribution's entry points and describing one
    parses its distribution's metadata: on the way to ready, once is enough."""
    from sedna.plugins import loader

    groups: list[str] = []
    real = loader._entry_points_of

    def counted(group: str) -> Any:
        groups.append(group)
        return real(group)

    monkeypatch.setattr(loader, "_entry_points_of", counted)
    loaded = load_plugins(GMConfig.model_validate({"features": {"dataset": {}}}))
    assert groups == ["sedna.features"]
    assert [f.feature.name for f in loaded.features] == ["dataset"]
    assert loaded.discovered == discover_plugins()
    assert "reid" in loaded.left_off
