"""Sedna's own Go binaries as peers of the tests: where they are, and the real LC as a
process.

The binaries are not part of the project. They are found through `SEDNA_LC_BIN` /
`SEDNA_GO_GM_BIN`, else in `../shared/sedna-bin/` next to the project; a test that
needs one skips, naming what is missing, when it is not there.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from support.outside import sedna_bin


def sedna_binary(name: str, env: str) -> Path:
    """The binary `name` (env `env`, else the default folder), or skip the test."""
    path = sedna_bin(name)  # the one place that knows where Sedna's files are
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.skip(f"Sedna's {name} binary not found: set {env} or put it at {path}")
    return path


def lc_binary() -> Path:
    return sedna_binary("sedna-lc", "SEDNA_LC_BIN")


def go_gm_binary() -> Path:
    return sedna_binary("sedna-gm", "SEDNA_GO_GM_BIN")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RealLC:
    """Sedna's `sedna-lc` for one node, dialling a GM on 127.0.0.1.

    Its local paths (datasets, models, output dirs, its SQLite DB) all live under
    `root` (`ROOTFS_MOUNT_DIR`), so a test owns everything it writes. The workers' REST
    API listens on `port`; `--v=4` makes it log every message, kept in `log`.
    """

    def __init__(self, binary: Path, root: Path, node: str, gm_port: int) -> None:
        self.binary = binary
        self.root = root
        self.node = node
        self.gm_port = gm_port
        self.port = free_port()
        self.log = root / f"lc-{node}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        root.mkdir(parents=True, exist_ok=True)

    def start(self) -> RealLC:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GM_ADDRESS": f"127.0.0.1:{self.gm_port}",
            "NODENAME": self.node,
            "BIND_PORT": str(self.port),
            "ROOTFS_MOUNT_DIR": str(self.root),
        }
        for _ in range(5):
            env["BIND_PORT"] = str(self.port)
            with open(self.log, "ab") as out:
                self.proc = subprocess.Popen(
                    [str(self.binary), "--v=4"], stdout=out, stderr=subprocess.STDOUT, env=env
                )
            try:  # the free port may be taken before the LC binds it (busy machines)
                self.proc.wait(1.5)
            except subprocess.TimeoutExpired:
                return self
            if "address already in use" not in self.logs():
                return self
            self.port = free_port()
        return self

    def kill(self) -> None:
        """`kill -9`: no goodbye to the GM, its in-memory state gone, its DB kept."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def path(self, local: str) -> Path:
        """Where the LC finds a node-local path (under its ROOTFS_MOUNT_DIR)."""
        return self.root / local.lstrip("/")

    def logs(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.logs().splitlines()[-lines:])

    def report(
        self,
        worker: str,
        *,
        namespace: str,
        owner_kind: str,
        owner_name: str,
        kind: str,
        status: str,
        results: Sequence[Mapping[str, Any]] = (),
        owner_info: Mapping[str, Any] | None = None,
    ) -> int:
        """A worker's report to its LC (`POST /sedna/workers/<name>/info`), as Sedna's
        Python library sends it on a stage's end; returns the HTTP status."""
        body = {
            "name": worker,
            "namespace": namespace,
            "ownerName": owner_name,
            "ownerKind": owner_kind,
            "ownerInfo": dict(owner_info or {}),
            "kind": kind,
            "status": status,
            "results": [dict(r) for r in results],
        }
        return self.post(f"/sedna/workers/{worker}/info", json.dumps(body).encode())

    def post(self, path: str, body: bytes) -> int:
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=body,
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                return int(resp.status)
        except urllib.error.HTTPError as err:
            return int(err.code)
