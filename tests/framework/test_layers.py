"""The import-linter contract that keeps plugins on the public API stays complete."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_plugin_contract_forbids_every_private_runtime_module() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contract = next(c for c in config["contracts"] if c["name"].startswith("Feature plugins"))
    forbidden = set(contract["forbidden_modules"])
    runtime = ROOT / "sedna" / "runtime"
    private = {
        f"sedna.runtime.{p.stem if p.is_file() else p.name}"
        for p in runtime.iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()
    }
    assert private - forbidden == set(), "add these to the plugin contract in pyproject.toml"


def test_runtime_exports_resolve() -> None:
    import sedna.runtime as runtime

    assert sorted(runtime.__all__) == sorted(runtime._EXPORTS)
    for name in runtime.__all__:
        assert getattr(runtime, name) is not None, name
