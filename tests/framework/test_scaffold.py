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


def without_mypypath() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "MYPYPATH"}


def test_the_scaffold_installs_lists_type_checks_and_passes_its_test(tmp_path: Path) -> None:
    made = cli("new-plugin", "edge_audit", "--kind", "Model", "--dir", str(tmp_path), cwd=ROOT)
    assert made.returncode == 0, made.stderr
    widget = cli(
        "new-plugin",
        "widget_watch",
        "--kind",
        "example.com/v1/Widget",
        "--dir",
        str(tmp_path),
        cwd=ROOT,
    )
    assert widget.returncode == 0, widget.stderr
    plugin = tmp_path / "edge_audit"
    assert sorted(p.relative_to(plugin).as_posix() for p in plugin.rglob("*") if p.is_file()) == [
        "README.md",
        "pyproject.toml",
        "sedna_edge_audit/__init__.py",
        "sedna_edge_audit/options.py",
        "sedna_edge_audit/plugin.py",
        "sedna_edge_audit/py.typed",
        "tests/test_edge_audit.py",
    ]

    env = TempEnv(tmp_path / "venv")
    env.pip_install(plugin)
    env.pip_install(tmp_path / "widget_watch")
    listed = env.run("-m", "sedna.cli", "plugins")
    assert listed.returncode == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()]
    assert ["edge_audit", "sedna-gm-edge-audit", "0.1.0", "Model", "yes"] in rows
    assert ["Model", "edge_audit"] in rows  # no first-party plugin claims Model
    assert ["widget_watch", "sedna-gm-widget-watch", "0.1.0", "Widget", "yes"] in rows

    for each in (plugin, tmp_path / "widget_watch"):  # a CRD's kind: its test installs the CRD
        tests = env.run("-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", cwd=each)
        assert tests.returncode == 0, tests.stdout + tests.stderr
        assert "1 passed" in tests.stdout


@pytest.mark.parametrize("kind", ["Model", "JointInferenceService", "example.com/v1/Widget"])
def test_the_scaffold_passes_ruff_and_mypy_as_generated(kind: str, tmp_path: Path) -> None:
    """ruff with its defaults and mypy --strict, with nothing to configure (no MYPYPATH)."""
    made = cli("new-plugin", "edge_audit", "--kind", kind, "--dir", str(tmp_path), cwd=ROOT)
    assert made.returncode == 0, made.stderr
    plugin = tmp_path / "edge_audit"
    for tool in (["ruff", "check", "."], ["ruff", "format", "--check", "."]):
        ran = subprocess.run(
            [sys.executable, "-m", *tool],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=plugin,
        )
        assert ran.returncode == 0, ran.stdout + ran.stderr
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
        env=without_mypypath(),
    )
    assert typed.returncode == 0, typed.stdout + typed.stderr


def test_a_bad_name_or_kind_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = cli("new-plugin", "Edge-Audit", cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.startswith("sedna-gm: new-plugin: 'Edge-Audit' is not a plugin name")
    kind = cli("new-plugin", "edge_audit", "--kind", "Widget", cwd=tmp_path)
    assert kind.returncode == 2
    assert kind.stderr.startswith("sedna-gm: new-plugin: --kind 'Widget' is not a Sedna kind")
    assert "GROUP/VERSION/KIND" in kind.stderr
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


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--kind", "example.com/v1"], "--kind 'example.com/v1': expected KIND"),
        (["--kind", "a/b/c/d"], "--kind 'a/b/c/d': expected KIND"),
        (["--kind", "//"], "--kind '//': group '' is not a CRD's API group"),
        (["--kind", "example/v1/Widget"], "group 'example' is not a CRD's API group"),
        (["--kind", "Example.com/v1/Widget"], "group 'Example.com' is not a CRD's API group"),
        (["--kind", "example.com/V1/Widget"], "version 'V1' is not an API version"),
        (["--kind", "example.com/v1/widget"], "kind 'widget' is not a kind"),
        (["--kind", "example.com/v1/Wid-get"], "kind 'Wid-get' is not a kind"),
        (["--kind", "sedna.io/v1alpha1/Widget"], "sedna.io serves only Sedna's kinds"),
        (["--kind", "example.com/v1/Widget", "--plural", "Widgets"], "--plural 'Widgets'"),
        (["--kind", "Model", "--plural", "modelz"], "--plural 'modelz': Model's plural is models"),
    ],
)
def test_a_malformed_kind_is_one_line_and_exit_2(
    args: list[str], says: str, tmp_path: Path
) -> None:
    bad = cli("new-plugin", "edge_audit", *args, cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.startswith("sedna-gm: new-plugin: "), bad.stderr
    assert says in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_crds_kind_gets_its_group_version_and_plural(tmp_path: Path) -> None:
    made = cli(
        "new-plugin",
        "box_watch",
        "--kind",
        "shop.example.com/v1beta1/Box",
        "--dir",
        str(tmp_path),
        cwd=ROOT,
    )
    assert made.returncode == 0, made.stderr
    package = tmp_path / "box_watch" / "sedna_box_watch"
    plugin = (package / "plugin.py").read_text()
    assert 'RESOURCE = Resource("shop.example.com", "v1beta1", "boxes", "Box")' in plugin
    assert "@feature.reconcile(RESOURCE)" in plugin  # its RBAC is derived from the handler
    test = (tmp_path / "box_watch" / "tests" / "test_box_watch.py").read_text()
    assert '"apiVersion": "shop.example.com/v1beta1"' in test
    assert '"name": "boxes.shop.example.com"' in test
