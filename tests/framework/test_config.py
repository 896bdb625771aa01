"""gm.yaml: Sedna's keys and defaults, and errors that name the file and the key path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sedna.runtime.config import ConfigError, GMConfig, load_config


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "gm.yaml"
    p.write_text(text)
    return p


def test_defaults_equal_sednas() -> None:
    c = load_config(None, {})
    assert c.kubeConfig == ""
    assert c.master == ""
    assert c.namespace == ""
    assert c.websocket.address == "0.0.0.0"
    assert c.websocket.port == 9000
    assert c.localController.server == "http://localhost:9100"
    assert c.knowledgeBaseServer.server == "http://localhost:9020"
    assert c.minResyncPeriodSeconds == 30


def test_sednas_own_gm_yaml_is_accepted(tmp_path: Path) -> None:
    # The shape of Sedna's build/gm/gm-config.yaml as its Helm chart renders it.
    p = write(
        tmp_path,
        'kubeConfig: ""\nmaster: ""\nnamespace: ""\nwebsocket:\n  address: 0.0.0.0\n'
        "  port: 9000\nlocalController:\n  server: http://localhost:9100\n"
        "knowledgeBaseServer:\n  server: http://localhost:9020\nminResyncPeriodSeconds: 30\n",
    )
    assert load_config(p, {}) == GMConfig()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("websocket:\n  port: abc\n", 'websocket.port: expected an integer, got "abc"'),
        ("websocket:\n  prot: 1\n", "websocket.prot: unknown key"),
        ("bogus: 1\n", "bogus: unknown key"),
        (
            "logging:\n  format: xml\n",
            "logging.format: expected one of 'text' or 'json', got \"xml\"",
        ),
        (
            "features:\n  x:\n    workers: many\n",
            'features.x.workers: expected an integer, got "many"',
        ),
        (
            "features:\n  x:\n    enabled: maybe\n",
            'features.x.enabled: expected a boolean, got "maybe"',
        ),
        ("websocket: 5\n", "websocket: expected a mapping, got 5"),
        (
            "minResyncPeriodSeconds: 0\n",
            "minResyncPeriodSeconds: Input should be greater than or equal to 1, got 0",
        ),
    ],
)
def test_errors_name_file_and_key_path(tmp_path: Path, text: str, message: str) -> None:
    p = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_config(p, {})
    assert str(err.value) == f"{p}: {message}"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.yaml: file not found"):
        load_config(tmp_path / "nope.yaml", {})


def test_not_yaml_and_not_a_mapping(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"gm\.yaml: not valid YAML \(line 2, column 1\)"):
        load_config(write(tmp_path, "a: [1\n"), {})
    with pytest.raises(ConfigError, match=r"gm\.yaml: expected a mapping at the top level"):
        load_config(write(tmp_path, "- 1\n"), {})


def test_env_overrides(tmp_path: Path) -> None:
    p = write(
        tmp_path, "websocket:\n  port: 9000\nfeatures:\n  incremental_learning:\n    workers: 1\n"
    )
    c = load_config(
        p,
        {
            "SEDNA_GM_WEBSOCKET_PORT": "9001",
            "SEDNA_GM_KUBECONFIG": str(p),  # any existing file
            "SEDNA_GM_LOCALCONTROLLER_SERVER": "http://lc:9100",
            "SEDNA_GM_FEATURES_INCREMENTAL_LEARNING_WORKERS": "4",
            "SEDNA_GM_FEATURES_OTHER_FEATURE_ENABLED": "false",
            "SEDNA_GM_WEBSOCKET_TLS_CERTFILE": "/c.pem",
        },
        known_features=("other_feature",),
    )
    assert c.websocket.port == 9001
    assert c.kubeConfig == str(p)
    assert c.localController.server == "http://lc:9100"
    assert c.feature("incremental_learning").workers == 4
    assert c.feature("other_feature").enabled is False
    assert c.websocket.tls.certFile == "/c.pem"


def test_env_override_errors_name_the_variable() -> None:
    with pytest.raises(ConfigError, match="environment SEDNA_GM_WEBSOCKET_PROT: no such key"):
        load_config(None, {"SEDNA_GM_WEBSOCKET_PROT": "1"})
    expected = r'environment SEDNA_GM_WEBSOCKET_PORT: websocket\.port: expected an integer, got "x"'
    with pytest.raises(ConfigError, match=expected):
        load_config(None, {"SEDNA_GM_WEBSOCKET_PORT": "x"})


@pytest.mark.parametrize("command", [["check-config"], []])
def test_cli_exits_2_with_one_line_and_no_traceback(tmp_path: Path, command: list[str]) -> None:
    p = write(tmp_path, "websocket:\n  port: abc\n")
    proc = subprocess.run(
        [sys.executable, "-m", "sedna.cli", *command, "--config", str(p)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr == f'sedna-gm: {p}: websocket.port: expected an integer, got "abc"\n'
    assert "Traceback" not in proc.stdout + proc.stderr


def test_cli_missing_file_exits_2(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "sedna.cli", "--config", str(tmp_path / "gm.yaml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"sedna-gm: {tmp_path / 'gm.yaml'}: file not found"


def test_kubeconfig_must_exist(tmp_path: Path) -> None:
    p = write(tmp_path, f"kubeConfig: {tmp_path / 'nope'}\n")
    with pytest.raises(ConfigError) as err:
        load_config(p, {})
    assert str(err.value) == f"{p}: kubeConfig: file not found: {tmp_path / 'nope'}"
