"""Builds and installs the tiny plugin distributions under plugin_sources/ for real.

Each is installed with pip into its own directory, so a test puts exactly the
distributions it needs on sys.path and entry-point discovery sees real .dist-info.
"""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

SOURCES = Path(__file__).parent / "plugin_sources"
PLUGINS = (
    "tiny",
    "broken",
    "dup",
    "marker",
    "typo",
    "unmarked",
    "misnamed",
    "alien",
    "twin",
    "faulty",
)
PLUGIN_MODULES = {f"sedna_{name}_plugin" for name in PLUGINS}


@pytest.fixture(scope="session")
def plugin_dists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("plugin-dists")
    procs = {}
    for name in PLUGINS:
        # Built from a copy: setuptools writes build/ and egg-info next to the sources.
        src = shutil.copytree(SOURCES / name, root / f"{name}-src")
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(root / name),
            str(src),
        ]
        procs[name] = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = {}
    for name, proc in procs.items():
        log, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, f"installing {name} failed:\n{log.decode()}"
        out[name] = root / name
    return out


@pytest.fixture
def use_plugins(plugin_dists: dict[str, Path]) -> Iterator[Callable[..., str]]:
    """use_plugins("tiny", ...) puts those distributions on sys.path; returns a PYTHONPATH."""
    added: list[str] = []

    def use(*names: str) -> str:
        for name in names:
            path = str(plugin_dists[name])
            if path not in sys.path:
                sys.path.insert(0, path)
                added.append(path)
        importlib.invalidate_caches()
        return ":".join(str(plugin_dists[n]) for n in names)

    yield use
    for path in added:
        sys.path.remove(path)
    for mod in list(sys.modules):
        if mod in PLUGIN_MODULES:
            del sys.modules[mod]
    importlib.invalidate_caches()
