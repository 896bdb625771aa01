"""The distribution ships what its metadata promises: the Apache-2.0 licence text."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BUILD = """\
import sys
from setuptools import build_meta
out = sys.argv[1]
sdist = build_meta.build_sdist(out)
wheel = build_meta.build_wheel(out)
print("built:", sdist, wheel)
"""


def build(src: Path, out: Path) -> tuple[str, str]:
    """The sdist and the wheel of the project at `src`, built into `out` (their names)."""
    built = subprocess.run(
        [sys.executable, "-c", BUILD, str(out)],
        cwd=src,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    sdist_name, wheel_name = built.stdout.rsplit("built:", 1)[1].split()
    return sdist_name, wheel_name


def test_the_licence_ships_in_the_sdist_and_the_wheel(tmp_path: Path) -> None:
    # Built from a copy: setuptools writes build/ and egg-info next to the sources.
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "sedna", src / "sedna", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "dist"
    sdist_name, wheel_name = build(src, out)
    licence = (ROOT / "LICENSE").read_text()
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence

    with tarfile.open(out / sdist_name) as sdist:
        top = sdist_name.removesuffix(".tar.gz")
        member = sdist.extractfile(f"{top}/LICENSE")
        assert member is not None
        assert member.read().decode() == licence

    with zipfile.ZipFile(out / wheel_name) as wheel:
        names = wheel.namelist()
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        assert wheel.read(f"{dist_info}/licenses/LICENSE").decode() == licence
        metadata = wheel.read(f"{dist_info}/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata
    assert "License-File: LICENSE" in metadata


PLUGINS = sorted((ROOT / "plugins").glob("**/pyproject.toml"))


def test_every_plugin_distribution_ships_the_licence_it_declares() -> None:
    """Each first-party plugin is a distribution of its own: its metadata says Apache-2.0,
    so its sdist and wheel carry the licence text too (the root's, byte for byte)."""
    assert len(PLUGINS) == 10
    licence = (ROOT / "LICENSE").read_bytes()
    for pyproject in PLUGINS:
        text = pyproject.read_text()
        assert 'license = "Apache-2.0"' in text, pyproject
        assert 'license-files = ["LICENSE"]' in text, pyproject
        assert (pyproject.parent / "LICENSE").read_bytes() == licence, pyproject


def test_a_plugin_wheel_carries_the_licence(tmp_path: Path) -> None:
    plugin = ROOT / "plugins" / "contrib" / "dataset"
    src = tmp_path / "src"
    shutil.copytree(plugin, src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    out = tmp_path / "dist"
    _, wheel_name = build(src, out)
    with zipfile.ZipFile(out / wheel_name) as wheel:
        (dist_info,) = {n.split("/")[0] for n in wheel.namelist() if ".dist-info/" in n}
        assert wheel.read(f"{dist_info}/licenses/LICENSE") == (ROOT / "LICENSE").read_bytes()
