"""gm.yaml: Sedna's keys and defaults, and errors that name the file and the key path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sedna.runtime.config import ConfigError, GMConfig, _parse_yaml, load_config


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


def test_a_malformed_file_is_reported_in_pyyaml_s_own_words(tmp_path: Path) -> None:
    """gm.yaml is parsed by libyaml when there is one; what it refuses is parsed again by
    PyYAML's parser, so the message is the same either way."""
    text = "a: b\n c: d\n"
    with pytest.raises(yaml.YAMLError) as pure:
        yaml.safe_load(text)
    mark = pure.value.problem_mark  # type: ignore[attr-defined]
    problem = pure.value.problem  # type: ignore[attr-defined]
    where = f"line {mark.line + 1}, column {mark.column + 1}"
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, text), {})
    assert str(err.value).endswith(f"gm.yaml: not valid YAML ({where}): {problem}")


def test_every_shipped_config_reads_as_pyyaml_reads_it() -> None:
    for path in sorted(Path(__file__).resolve().parents[2].glob("config/gm*.yaml")):
        assert _parse_yaml(path.read_text()) == yaml.safe_load(path.read_text()), path


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


def _il_options(feature: str) -> tuple[str, ...]:
    return ("maxConditions", "failureBackoffSeconds") if feature == "incremental_learning" else ()


@pytest.mark.parametrize("var", ["MAXCONDITIONS", "MAX_CONDITIONS"])
def test_env_override_spells_a_feature_option_the_file_does_not_mention(var: str) -> None:
    """A feature's options resolve as a core section's keys do: snake or run-together."""
    c = load_config(
        None,
        {f"SEDNA_GM_FEATURES_INCREMENTAL_LEARNING_{var}": "21"},
        known_features=("incremental_learning",),
        feature_options=_il_options,
    )
    assert c.feature("incremental_learning").options == {"maxConditions": 21}


def test_env_override_finds_the_framework_keys_of_a_feature_section() -> None:
    c = load_config(
        None,
        {"SEDNA_GM_FEATURES_INCREMENTAL_LEARNING_WORKERS": "3"},
        known_features=("incremental_learning",),
        feature_options=_il_options,
    )
    assert c.feature("incremental_learning").workers == 3
    assert c.feature("incremental_learning").options == {}


def test_feature_options_are_asked_only_for_an_addressed_feature() -> None:
    asked: list[str] = []

    def options(feature: str) -> tuple[str, ...]:
        asked.append(feature)
        return _il_options(feature)

    load_config(
        None,
        {"SEDNA_GM_WEBSOCKET_PORT": "9001", "SEDNA_GM_FEATURES_INCREMENTAL_LEARNING_WORKERS": "2"},
        known_features=("incremental_learning", "dataset"),
        feature_options=options,
    )
    assert asked == ["incremental_learning"]


def test_source_of_names_the_variable_that_set_a_key(tmp_path: Path) -> None:
    p = write(tmp_path, "features:\n  incremental_learning:\n    workers: 1\n")
    var = "SEDNA_GM_FEATURES_INCREMENTAL_LEARNING_BOGUS"
    c = load_config(p, {var: "1"}, known_features=("incremental_learning",))
    assert c.source_of(("features", "incremental_learning", "bogus"), str(p)) == (
        f"environment {var}"
    )
    assert c.source_of(("features", "incremental_learning", "workers"), str(p)) == str(p)


def _check_config(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    import os

    p = write(tmp_path, "features:\n  incremental_learning:\n    enabled: true\n")
    return subprocess.run(
        [sys.executable, "-m", "sedna.cli", "check-config", "--config", str(p)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )


def test_cli_env_override_of_an_option_the_file_does_not_mention(tmp_path: Path) -> None:
    """The README's promise: the run-together spelling is accepted, file key or not."""
    proc = _check_config(tmp_path, {"SEDNA_GM_FEATURES_INCREMENTAL_LEARNING_MAXCONDITIONS": "21"})
    assert proc.returncode == 0, proc.stderr
    assert yaml.safe_load(proc.stdout)["features"]["incremental_learning"]["maxConditions"] == 21


@pytest.mark.parametrize(
    ("var", "value", "reason"),
    [
        ("MAXCONDITIONS", "2", "maxConditions: Input should be greater than or equal to 6"),
        ("BOGUS", "1", "bogus: unknown option"),
    ],
)
def test_cli_feature_option_errors_name_the_variable(
    tmp_path: Path, var: str, value: str, reason: str
) -> None:
    name = f"SEDNA_GM_FEATURES_INCREMENTAL_LEARNING_{var}"
    proc = _check_config(tmp_path, {name: value})
    assert proc.returncode == 2
    assert proc.stderr.startswith(
        f"sedna-gm: environment {name}: features.incremental_learning.{reason}"
    ), proc.stderr
    assert "Traceback" not in proc.stderr


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
