"""EmbeddedMode.prepare: server, CRDs, seeding, kubeconfig, LC token, persistence."""

from __future__ import annotations

import base64
import socket
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import kubernetes
import pytest
import yaml

from sedna.embedded.mode import EmbeddedMode
from sedna.runtime.config import ConfigError, GMConfig
from sedna.runtime.kube import (
    INCREMENTAL_LEARNING_JOBS,
    MODELS,
    SECRETS,
    KubeClient,
    api_client_from_config,
)

PROJECT = Path(__file__).resolve().parents[2]
EXAMPLE = PROJECT / "examples" / "incremental-learning"


def _config(state: Path, **embedded: object) -> GMConfig:
    section = {"enabled": True, "port": 0, "stateDir": str(state), "apply": [str(EXAMPLE)]}
    section.update(embedded)
    # the shared-token mode (explicit since auth: node is the default) keeps lc-token
    return GMConfig.model_validate({"embedded": section, "websocket": {"auth": "token"}})


@pytest.fixture()
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


@contextmanager
def _kube(config: GMConfig) -> Iterator[KubeClient]:
    """A client that reads the written kubeconfig, as the GM itself does."""
    client = api_client_from_config(config.kubeConfig, "")
    try:
        yield KubeClient(client, pool_size=None)
    finally:
        client.close()


def test_prepare_serves_seeds_and_points_the_gm_at_itself(state: Path) -> None:
    mode = EmbeddedMode(_config(state))
    config = mode.prepare()
    try:
        kubeconfig = state / "kubeconfig"
        assert config.kubeConfig == str(kubeconfig) and config.master == ""
        assert stat.S_IMODE(kubeconfig.stat().st_mode) == 0o600
        assert (state / "state.db").exists()
        assert stat.S_IMODE(state.stat().st_mode) == 0o700
        token = state / "lc-token"
        assert config.websocket.tokenFile == str(token)
        assert stat.S_IMODE(token.stat().st_mode) == 0o600
        assert mode.lc_token == token.read_text().strip()
        with _kube(config) as kube:
            crds = kubernetes.client.ApiextensionsV1Api(kube.api_client)
            names = {c.metadata.name for c in crds.list_custom_resource_definition().items}
            assert len({n for n in names if n.endswith(".sedna.io")}) == 11
            jobs = kube.resource(INCREMENTAL_LEARNING_JOBS).list("default")["items"]
            assert [j["metadata"]["name"] for j in jobs] == ["helmet-detection-demo"]
            models = kube.resource(MODELS).list("default")["items"]
            assert {m["metadata"]["name"] for m in models} == {"initial-model", "deploy-model"}
    finally:
        mode.stop()


def test_restart_keeps_objects_and_does_not_reseed_changes(state: Path) -> None:
    mode = EmbeddedMode(_config(state))
    config = mode.prepare()
    token = mode.lc_token
    with _kube(config) as kube:
        kube.resource(MODELS).patch("default", "deploy-model", {"spec": {"format": "onnx"}})
        kube.resource(MODELS).delete("default", "initial-model")
    mode.stop()

    again = EmbeddedMode(_config(state))
    config = again.prepare()
    try:
        assert again.lc_token == token  # the LCs' token survives restarts
        with _kube(config) as kube:
            deploy = kube.resource(MODELS).get("default", "deploy-model")
            assert deploy["spec"]["format"] == "onnx"  # the user's change is kept
            names = {m["metadata"]["name"] for m in kube.resource(MODELS).list("default")["items"]}
            assert names == {"initial-model", "deploy-model"}  # seeded again since absent
    finally:
        again.stop()


def test_explicit_token_file_and_auth_none(state: Path, tmp_path: Path) -> None:
    tok = tmp_path / "tok"
    tok.write_text("\nmine\nold\n")
    cfg = _config(state, apply=[]).model_copy()
    cfg = cfg.model_copy(
        update={"websocket": cfg.websocket.model_copy(update={"tokenFile": str(tok)})}
    )
    mode = EmbeddedMode(cfg)
    try:
        assert mode.prepare().websocket.tokenFile == str(tok)
        assert mode.lc_token == "mine"
    finally:
        mode.stop()
    cfg = cfg.model_copy(update={"websocket": cfg.websocket.model_copy(update={"auth": "none"})})
    mode = EmbeddedMode(cfg)
    try:
        mode.prepare()
        assert mode.lc_token is None
    finally:
        mode.stop()


def test_busy_port_is_a_config_error(state: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(ConfigError, match=r"embedded.port: cannot listen on 127.0.0.1:\d+"):
            EmbeddedMode(_config(state, port=port)).prepare()


def test_a_second_gm_on_the_same_state_leaves_the_running_kubeconfig(state: Path) -> None:
    """`sedna-gm --config config/gm.yaml` started twice: the second stops on the state
    directory's lock, and `kubectl` of the first must still find its kubeconfig."""
    running = EmbeddedMode(_config(state))
    config = running.prepare()
    try:
        assert running.server is not None
        second = EmbeddedMode(_config(state, port=running.server.port))
        with pytest.raises(ConfigError, match=r"embedded.stateDir: .* in use by another process"):
            second.prepare()
        with _kube(config) as kube:  # the running server, through its kubeconfig
            names = {m["metadata"]["name"] for m in kube.resource(MODELS).list("default")["items"]}
        assert {"initial-model", "deploy-model"} <= names
    finally:
        running.stop()


def test_bad_manifests_are_config_errors(state: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file or directory"):
        EmbeddedMode(_config(state, apply=[str(tmp_path / "missing")])).prepare()
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"apiVersion": "apps/v1", "kind": "StatefulSet",
                                   "metadata": {"name": "x"}}))  # fmt: skip
    with pytest.raises(ConfigError, match="StatefulSet x: kind not supported"):
        EmbeddedMode(_config(state, apply=[str(bad)])).prepare()


def test_auth_node_issues_a_token_per_simulated_node(state: Path) -> None:
    cfg = _config(state, simulate={"nodes": ["edge-a", "edge-b"]})
    cfg = cfg.model_copy(update={"websocket": cfg.websocket.model_copy(update={"auth": "node"})})
    mode = EmbeddedMode(cfg)
    config = mode.prepare()
    try:
        assert sorted(mode.node_tokens) == ["edge-a", "edge-b"]
        assert mode.node_tokens["edge-a"] != mode.node_tokens["edge-b"]
        with _kube(config) as kube:
            secret = kube.resource(SECRETS).get("sedna", "sedna-lc-token-edge-a")
            assert secret["metadata"]["labels"] == {"sedna.io/lc-node": "edge-a"}
            token = base64.b64decode(secret["data"]["token"]).decode()
            assert token == mode.node_tokens["edge-a"]
    finally:
        mode.stop()
