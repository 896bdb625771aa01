"""Sedna's own LocalController restarted (kill -9): how soon it has its node's objects again.

The GM (incremental learning and dataset features, resyncs an hour apart) runs the
incremental-learning example of `examples/`; Sedna's `sedna-lc` connects as its edge
node, receives the Dataset, the Models and the job, and is then killed with SIGKILL
and started again `--restarts` times. Each restart is timed from the new process's
start to the last of the Dataset, `initial-model` and the job seen in its log
(`--v=4` logs every message it receives). Go's GM sends them only at its next resync.

The LC binary comes from `SEDNA_LC_BIN`, else `../shared/sedna-bin/sedna-lc` beside the
project. `sedna-lc` serves its workers' API on all interfaces, so run the bench in a
network namespace of its own (as root):

    unshare -n sh -c 'ip link set lo up; python bench/bench_real_lc.py'

Prints the figures and writes `bench/results/real_lc.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sedna_dataset.plugin as ds_plugin
import sedna_incremental_learning.plugin as il_plugin
import yaml
from loguru import logger

from sedna.runtime import NAMESPACES, KubeClient, sedna_resource
from sedna.testing.apiserver import api_client_for, start_apiserver
from sedna.testing.gm import GMHarness

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "real_lc.json"
EXAMPLE = ROOT / "examples" / "incremental-learning"
NODE = "edge-node"
PLURALS = {
    "Model": "models",
    "Dataset": "datasets",
    "IncrementalLearningJob": "incrementallearningjobs",
}
WANTED = ("dataset ResourceName:incremental-dataset", "model ResourceName:initial-model",
          "incrementallearningjob ResourceName:helmet-detection-demo")  # fmt: skip


def lc_binary() -> Path:
    env = os.environ.get("SEDNA_LC_BIN")
    path = Path(env) if env else ROOT.parent / "shared" / "sedna-bin" / "sedna-lc"
    if not path.is_file():
        sys.exit(f"no sedna-lc at {path}: set SEDNA_LC_BIN to Sedna's LocalController binary")
    return path


class LC:
    """One sedna-lc process; its log lines with the time each was read."""

    def __init__(self, binary: Path, env: dict[str, str]) -> None:
        self.lines: list[tuple[float, str]] = []
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [str(binary), "--v=4"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append((time.monotonic(), line))

    def all_received(self, timeout: float) -> float | None:
        """Seconds from the start to the last of `WANTED` received, None if not in time."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            seen = [
                next((t for t, line in list(self.lines) if "received message header" in line
                      and w in line), None)
                for w in WANTED
            ]  # fmt: skip
            if all(t is not None for t in seen):
                return max(t for t in seen if t is not None) - self.started
            time.sleep(0.005)
        return None

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--restarts", type=int, default=10)
    args = parser.parse_args()
    binary = lc_binary()
    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    server = start_apiserver()
    kube = KubeClient(api_client_for(server))
    ns = f"bench-{uuid.uuid4().hex[:8]}"
    kube.resource(NAMESPACES).create(
        None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    )
    plugins = {p.FEATURE_NAME: p for p in (il_plugin, ds_plugin)}
    gm = GMHarness(
        lambda: api_client_for(server), ns, features={n: {} for n in plugins}, plugins=plugins
    ).start()
    for name in ("01-models.yaml", "02-dataset.yaml", "03-incremental-learning-job.yaml"):
        for doc in yaml.safe_load_all((EXAMPLE / name).read_text()):
            if doc:
                kube.resource(sedna_resource(PLURALS[doc["kind"]])).create(ns, doc)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    bind_port = sock.getsockname()[1]
    sock.close()
    figures: list[float] = []
    with tempfile.TemporaryDirectory() as rootfs:
        env = {**os.environ, "GM_ADDRESS": f"127.0.0.1:{gm.port}", "NODENAME": NODE,
               "ROOTFS_MOUNT_DIR": rootfs, "BIND_PORT": str(bind_port)}  # fmt: skip
        lc = LC(binary, env)
        try:
            first = lc.all_received(30.0)
            if first is None:
                sys.exit("sedna-lc did not receive the example's objects")
            for _ in range(args.restarts):
                time.sleep(1.0)  # let it settle, as a running LC would be
                lc.kill()
                lc = LC(binary, env)
                took = lc.all_received(60.0)
                if took is None:
                    sys.exit("a restarted sedna-lc did not get its objects within 60 s")
                figures.append(took)
        finally:
            lc.kill()
            gm.stop()
            server.stop()
    figures.sort()
    result = {
        "restarts": args.restarts,
        "median_ms": round(figures[len(figures) // 2] * 1000, 1),
        "max_ms": round(figures[-1] * 1000, 1),
        "gm_resync_period_s": gm.config.minResyncPeriodSeconds,
    }
    print(
        f"sedna-lc restarted {args.restarts} times: Dataset, Model and job received "
        f"{result['median_ms']} ms (median), {result['max_ms']} ms (max) after its start"
    )
    record: dict[str, Any] = {
        "benchmark": "real_lc",
        "unit": "milliseconds from sedna-lc's start to its node's last object received",
        "results": result,
        "load_average_at_end": os.getloadavg()[0],
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    RESULTS.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
