"""`sedna-gm token create NODE` issues and rotates a node's LC token in its Secret."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml

from sedna.cli import main
from sedna.embedded.apiserver import APIServer
from sedna.runtime.kube import SECRETS, KubeClient


def test_token_create_prints_the_token_it_stores(
    embedded_apiserver: APIServer,
    api_client: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ns = f"t-{uuid.uuid4().hex[:10]}"
    kubernetes.client.CoreV1Api(api_client).create_namespace({"metadata": {"name": ns}})
    kubeconfig = tmp_path / "kubeconfig"
    embedded_apiserver.write_kubeconfig(kubeconfig)
    cfg = tmp_path / "gm.yaml"
    cfg.write_text(yaml.safe_dump({"kubeConfig": str(kubeconfig),
                                   "websocket": {"nodeTokenNamespace": ns}}))  # fmt: skip
    assert main(["--config", str(cfg), "token", "create", "edge-node"]) == 0
    first = capsys.readouterr().out.strip()
    secret = KubeClient(api_client).resource(SECRETS).get(ns, "sedna-lc-token-edge-node")
    assert base64.b64decode(secret["data"]["token"]).decode() == first
    assert main(["--config", str(cfg), "token", "create", "edge-node"]) == 0
    assert capsys.readouterr().out.strip() != first  # rotated


def test_token_create_names_what_went_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "gm.yaml"
    cfg.write_text(yaml.safe_dump({"master": "http://127.0.0.1:1"}))  # nothing listens
    assert main(["--config", str(cfg), "token", "create", "edge-node"]) == 2
    assert "token create edge-node" in capsys.readouterr().err


def test_token_create_with_an_embedded_gm_yaml_issues_it_in_the_embedded_server(
    embedded_apiserver: APIServer,
    api_client: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`sedna-gm token create NODE --config config/gm.yaml`: that gm.yaml sets no
    kubeConfig, its cluster is the embedded server whose kubeconfig the running GM wrote
    into embedded.stateDir; before the GM runs there is none, and the command says so."""
    ns = f"t-{uuid.uuid4().hex[:10]}"
    kubernetes.client.CoreV1Api(api_client).create_namespace({"metadata": {"name": ns}})
    state = tmp_path / "state"
    cfg = tmp_path / "gm.yaml"
    cfg.write_text(yaml.safe_dump({"embedded": {"enabled": True, "stateDir": "state"},
                                   "websocket": {"nodeTokenNamespace": ns}}))  # fmt: skip
    assert main(["--config", str(cfg), "token", "create", "edge-node"]) == 2
    assert f"embedded mode: no {state / 'kubeconfig'}" in capsys.readouterr().err
    state.mkdir()
    embedded_apiserver.write_kubeconfig(state / "kubeconfig")  # as the running GM does
    assert main(["--config", str(cfg), "token", "create", "edge-node"]) == 0
    token = capsys.readouterr().out.strip()
    secret = KubeClient(api_client).resource(SECRETS).get(ns, "sedna-lc-token-edge-node")
    assert base64.b64decode(secret["data"]["token"]).decode() == token
