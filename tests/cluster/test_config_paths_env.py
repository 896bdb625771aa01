"""Environment overrides are blamed on the variable; relative paths follow gm.yaml's folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sedna.runtime.config import ConfigError, load_config


def write(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "etc"
    folder.mkdir(exist_ok=True)
    p = folder / "gm.yaml"
    p.write_text(text)
    return p


def test_a_bad_override_names_the_variable_not_the_file(tmp_path: Path) -> None:
    p = write(tmp_path, "websocket:\n  port: 9000\n")
    with pytest.raises(ConfigError) as info:
        load_config(p, {"SEDNA_GM_WEBSOCKET_PORT": "abc"})
    assert str(info.value) == (
        'environment SEDNA_GM_WEBSOCKET_PORT: websocket.port: expected an integer, got "abc"'
    )
    # A bad value from the file is still the file's.
    p.write_text("websocket:\n  port: abc\n")
    with pytest.raises(ConfigError, match=rf"^{p}: websocket\.port"):
        load_config(p, {})


@pytest.mark.parametrize(
    "var",
    [
        "SEDNA_GM_FEATURES_INCREMENTAL_LEARNING_MAX_CONDITIONS",
        "SEDNA_GM_FEATURES_INCREMENTAL_LEARNING_MAXCONDITIONS",
    ],
)
def test_camel_case_options_from_the_environment(tmp_path: Path, var: str) -> None:
    p = write(tmp_path, "features:\n  incremental_learning:\n    maxConditions: 10\n")
    cfg = load_config(p, {var: "20"})
    assert cfg.feature("incremental_learning").options == {"maxConditions": 20}


def test_camel_case_option_absent_from_the_file(tmp_path: Path) -> None:
    p = write(tmp_path, "features: {}\n")
    env = {"SEDNA_GM_FEATURES_INCREMENTAL_LEARNING_MAX_CONDITIONS": "12"}
    cfg = load_config(p, env, known_features=("incremental_learning",))
    assert cfg.feature("incremental_learning").options == {"maxConditions": 12}


def test_camel_case_framework_keys_from_the_environment(tmp_path: Path) -> None:
    p = write(tmp_path, "{}\n")
    env = {
        "SEDNA_GM_LEADER_ELECTION_ENABLED": "true",
        "SEDNA_GM_WEBSOCKET_MAX_FRAME_BYTES": "2048",
        "SEDNA_GM_MIN_RESYNC_PERIOD_SECONDS": "40",
    }
    cfg = load_config(p, env)
    assert cfg.leaderElection.enabled
    assert cfg.websocket.maxFrameBytes == 2048
    assert cfg.minResyncPeriodSeconds == 40
    with pytest.raises(ConfigError, match=r"^environment SEDNA_GM_LEADER_ELECTION_LEASE_NAME"):
        load_config(p, {"SEDNA_GM_LEADER_ELECTION_LEASE_NAME": "[1, 2]"})


def test_relative_paths_follow_the_config_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = write(
        tmp_path,
        "websocket:\n  tokenFile: secrets/token\n"
        "  tls: {certFile: tls/c.pem, keyFile: /abs/k.pem}\n"
        "embedded:\n  stateDir: state\n  apply: [../examples/il, /abs/x.yaml]\n",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    cfg = load_config(p, {})
    etc = p.parent
    assert cfg.websocket.tokenFile == str(etc / "secrets/token")
    assert cfg.websocket.tls.certFile == str(etc / "tls/c.pem")
    assert cfg.websocket.tls.keyFile == "/abs/k.pem"
    assert cfg.embedded.stateDir == str(etc / "state")
    assert cfg.embedded.apply == [str(etc / "../examples/il"), "/abs/x.yaml"]


def test_paths_from_the_environment_follow_the_working_directory(tmp_path: Path) -> None:
    p = write(tmp_path, "embedded:\n  stateDir: state\n")
    cfg = load_config(
        p, {"SEDNA_GM_EMBEDDED_STATE_DIR": "here", "SEDNA_GM_WEBSOCKET_TOKEN_FILE": "t"}
    )
    assert cfg.embedded.stateDir == "here"
    assert cfg.websocket.tokenFile == "t"


def test_kubeconfig_relative_to_the_file(tmp_path: Path) -> None:
    p = write(tmp_path, "kubeConfig: kube/config\n")
    with pytest.raises(ConfigError, match="kubeConfig: file not found"):
        load_config(p, {})
    (p.parent / "kube").mkdir()
    (p.parent / "kube" / "config").write_text("apiVersion: v1\n")
    assert load_config(p, {}).kubeConfig == os.path.join(p.parent, "kube", "config")
