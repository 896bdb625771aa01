"""Every bind failure is one line naming the key and the address, exit 2; readiness
fails, and says why, while no LC token can be read."""

from __future__ import annotations

import base64
import socket
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml

from tests.framework.test_cli_run import GM, base_config
from tests.support.waiting import wait_until


@pytest.fixture()
def busy_port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("section", "key"), [("metrics", "metrics.port"), ("websocket", "websocket.port")]
)
@pytest.mark.parametrize("leader", [False, True])
def test_a_busy_port_is_one_line_and_exit_2(
    apiserver: Any, tmp_path: Path, busy_port: int, section: str, key: str, leader: bool
) -> None:
    config = base_config(apiserver, tmp_path)
    config[section]["port"] = busy_port
    if leader:
        ns = config["namespace"]
        kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(_cfg(apiserver))).create_namespace(
            {"metadata": {"name": ns}}
        )
        config["leaderElection"] = {"enabled": True, "leaseNamespace": ns}
    path = tmp_path / "gm.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = subprocess.run(
        [sys.executable, "-m", "sedna.cli", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    errors = [line for line in proc.stderr.splitlines() if line.startswith("sedna-gm: ")]
    assert len(errors) == 1, proc.stderr
    assert errors[0].startswith(f"sedna-gm: {key}: cannot listen on 127.0.0.1:{busy_port}: ")


def _cfg(apiserver: Any) -> kubernetes.client.Configuration:
    from tests.conftest import make_configuration

    return make_configuration(apiserver)


def _readyz(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_readyz_fails_with_the_reason_while_the_token_secret_is_missing(
    apiserver: Any, tmp_path: Path
) -> None:
    config = base_config(apiserver, tmp_path)
    ns = config["namespace"]
    core = kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(_cfg(apiserver)))
    core.create_namespace({"metadata": {"name": ns}})
    secret = f"lc-token-{uuid.uuid4().hex[:6]}"
    config["websocket"].update(auth="token", tokenSecret=f"{ns}/{secret}")
    gm = GM(config, tmp_path)
    try:
        port = int(gm.until(r"serving /metrics.* on 127\.0\.0\.1:(\d+)")[1])
        gm.until(r"sedna-gm started")
        code, body = _readyz(port)
        assert code == 503, body
        assert (
            f"[-]lc-token failed: no LC token in websocket.tokenSecret {ns}/{secret} "
            "(Secret missing or without key 'token'): every LC is refused"
        ) in body
        token = base64.b64encode(b"s3cret").decode()
        core.create_namespaced_secret(ns, {"metadata": {"name": secret}, "data": {"token": token}})
        wait_until(lambda: _readyz(port)[0] == 200, 10, "readiness once the Secret exists")
        assert "[+]lc-token ok" in _readyz(port)[1]
    finally:
        gm.kill()
