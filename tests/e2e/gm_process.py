"""`sedna-gm` as a subprocess on a temp copy of config/gm.yaml, as a newcomer runs it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import kubernetes
import yaml

from sedna.runtime.kube import KubeClient

PROJECT = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def write_config(tmp: Path, **overrides: Any) -> Path:
    """config/gm.yaml with its own stateDir and free ports; `apply` made absolute.

    Port 0 lets the OS pick a free port at bind time, on every start: a port chosen
    here and bound later (or again after a restart) may meanwhile be taken, e.g. as
    the local port of another test's client connection.
    """
    cfg = yaml.safe_load((PROJECT / "config" / "gm.yaml").read_text())
    emb = cfg["embedded"]
    emb["stateDir"] = str(tmp / "state")
    emb["port"] = 0
    emb["apply"] = [str((PROJECT / "config" / p).resolve()) for p in emb.get("apply") or []]
    cfg["websocket"]["port"] = 0
    cfg["metrics"]["port"] = 0
    for key, value in overrides.items():
        cfg[key] = value
    path = tmp / "gm.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


class GMProcess:
    def __init__(self, config: Path) -> None:
        self.config = config
        cfg = yaml.safe_load(config.read_text())
        self.state = Path(cfg["embedded"]["stateDir"])
        self.kubeconfig = self.state / "kubeconfig"
        self.log = config.parent / "gm.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.api_client: kubernetes.client.ApiClient | None = None

    def start(self) -> None:
        # The last run's kubeconfig names its (now free) port: never connect through it.
        self.kubeconfig.unlink(missing_ok=True)
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env.pop("SEDNA_GM_CONFIG", None)
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "sedna.cli", "--config", str(self.config)],
                cwd=PROJECT,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
            )

    def tail(self, lines: int = 60) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def wait_for(self, probe: Callable[[], T | None], what: str, timeout: float) -> T:
        deadline = time.monotonic() + timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(
                    f"sedna-gm exited with {self.proc.returncode} while waiting for {what}; "
                    f"log tail:\n{self.tail()}"
                )
            try:
                got = probe()
            except Exception as exc:  # the server may not answer yet
                last_error = exc
                got = None
            if got:
                return got
            time.sleep(0.2)
        raise AssertionError(
            f"timed out after {timeout:g} s waiting for {what} (last error: {last_error!r}); "
            f"log tail:\n{self.tail()}"
        )

    def connect(self, timeout: float = 120.0) -> KubeClient:
        """Wait for the kubeconfig, then for the server to answer through it."""
        self.wait_for(self.kubeconfig.exists, f"{self.kubeconfig}", timeout)

        def ready() -> KubeClient:
            cfg = kubernetes.client.Configuration()
            kubernetes.config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=str(self.kubeconfig), client_configuration=cfg
            )
            client = kubernetes.client.ApiClient(cfg)
            kubernetes.client.VersionApi(client).get_code()
            self.api_client = client
            return KubeClient(client, pool_size=None)

        return self.wait_for(ready, "the embedded API server to answer", timeout)

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM and wait; returns the exit code."""
        if self.api_client is not None:
            self.api_client.close()
            self.api_client = None
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(
                    f"sedna-gm did not stop within {timeout:g} s of SIGTERM; log tail:\n"
                    f"{self.tail()}"
                ) from None
        code = self.proc.returncode
        self.proc = None
        return code
