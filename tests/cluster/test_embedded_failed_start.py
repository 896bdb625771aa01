"""A failed embedded start leaves no half-written kubeconfig behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from sedna.embedded.mode import EmbeddedMode
from sedna.runtime.config import ConfigError, GMConfig


def test_a_bad_manifest_leaves_no_kubeconfig_tmp(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: [not, a, mapping]\n")
    state = tmp_path / "state"
    config = GMConfig.model_validate(
        {"embedded": {"enabled": True, "port": 0, "stateDir": str(state), "apply": [str(bad)]}}
    )
    mode = EmbeddedMode(config)
    with pytest.raises(ConfigError):
        mode.prepare()
    mode.stop()
    leftovers = sorted(p.name for p in state.iterdir())
    assert "kubeconfig.tmp" not in leftovers and "kubeconfig" not in leftovers, leftovers
