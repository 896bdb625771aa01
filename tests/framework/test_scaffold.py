"""`sedna-gm new-plugin` writes a plugin that installs, lists, type-checks and passes its test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.venv import TempEnv

from sedna.embedded.apiserver.schema_validation import validate_custom_resource
from sedna.embedded.crds import schema_for
from sedna.runtime.kube import SEDNA_KINDS
from sedna.scaffold import example_spec

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sedna.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
    )


def test_the_scaffold_installs_lists_type_checks_and_passes_its_test(tmp_path: Path) -> None:
    made = cli("new-plugin", "edge_audit", "--kind", "Model", "--dir", str(tmp_path), cwd=ROOT)
    assert made.returncode == 0, made.stderr
    plugin = tmp_path / "edge_audit"
    assert sorted(p.relative_to(plugin).as_posix() for p in plugin.rglob("*") if p.is_file()) == [
        "README.md",
        "pyproject.toml",
        "sedna_edge_audit/__init__.py",
        "sedna_edge_audit/controller.py",
        "sedna_edge_audit/options.py",
        "sedna_edge_audit/plugin.py",
        "sedna_edge_audit/py.typed",
        "tests/test_edge_audit.py",
    ]

    env = TempEnv(tmp_path / "venv")
    env.pip_install(plugin)
    listed = env.run("-m", "sedna.cli", "plugins")
    assert listed.returncode == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()]
    assert ["edge_audit", "sedna-gm-edge-audit", "0.1.0", "Model", "yes"] in rows
    assert ["Model", "edge_audit"] in rows  # no first-party plugin claims Model

    tests = env.run("-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", cwd=plugin)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "1 passed" in tests.stdout

    # MYPYPATH: mypy cannot follow the import hook of an editable sedna-gm install.
    typed = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            "sedna_edge_audit",
            "tests",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=plugin,
        env={**os.environ, "MYPYPATH": str(ROOT)},
    )
    assert typed.returncode == 0, typed.stdout + typed.stderr


def test_a_bad_name_or_kind_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = cli("new-plugin", "Edge-Audit", cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.startswith("sedna-gm: new-plugin: 'Edge-Audit' is not a plugin name")
    kind = cli("new-plugin", "edge_audit", "--kind", "Widget", cwd=tmp_path)
    assert kind.returncode == 2
    assert kind.stderr.startswith("sedna-gm: new-plugin: --kind 'Widget' is not a Sedna kind")
    installed = cli("new-plugin", "dataset", cwd=tmp_path)
    assert installed.returncode == 2
    assert "a plugin named dataset is installed already (sedna-gm-dataset" in installed.stderr
    (tmp_path / "taken").mkdir()
    taken = cli("new-plugin", "taken", cwd=tmp_path)
    assert taken.returncode == 2 and "exists already" in taken.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["taken"]  # nothing written


@pytest.mark.parametrize("kind", sorted(SEDNA_KINDS.values()))
def test_the_scaffolds_example_object_is_valid_under_sednas_schema(kind: str) -> None:
    """The generated test creates this object on a validating server: it must be accepted."""
    obj = {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": kind,
        "metadata": {"name": "first"},
        "spec": example_spec(kind),
    }
    validate_custom_resource(schema_for(kind), obj, kind=kind, group="sedna.io", version="v1alpha1")


def test_the_readme_runs_only_what_the_test_extra_installs(tmp_path: Path) -> None:
    """After `pip install -e ".[test]"` every command of the README's block is there."""
    import re
    import tomllib

    made = cli("new-plugin", "edge_audit", "--kind", "Model", "--dir", str(tmp_path), cwd=ROOT)
    assert made.returncode == 0, made.stderr
    plugin = tmp_path / "edge_audit"
    project = tomllib.loads((plugin / "pyproject.toml").read_text())["project"]
    requirement = re.compile(r"[A-Za-z0-9_.-]+")
    installed = {
        requirement.match(r).group(0).lower()  # type: ignore[union-attr]
        for r in [*project["dependencies"], *project["optional-dependencies"]["test"]]
    }
    installed.add("sedna-gm")  # its command comes with the dependency
    readme = (plugin / "README.md").read_text()
    block = readme.split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line.split()[0] for line in block.splitlines() if line.strip()]
    assert commands[0] == "pip"
    assert "mypy" in commands and "pytest" in commands
    assert set(commands[1:]) <= installed, (commands, installed)
