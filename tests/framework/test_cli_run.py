"""`sedna-gm --config gm.yaml` runs, serves metrics and health, and stops on SIGTERM."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import yaml


def start_gm(config: dict[str, Any], tmp_path: Path) -> subprocess.Popen[str]:
    path = tmp_path / "gm.yaml"
    path.write_text(yaml.safe_dump(config))
    return subprocess.Popen(
        [sys.executable, "-m", "sedna.cli", "--config", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def read_until(
    proc: subprocess.Popen[str], pattern: str, lines: list[str], timeout: float = 30
) -> re.Match[str]:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        found = re.search(pattern, line)
        if found:
            return found
    raise AssertionError(f"{pattern!r} not seen; output:\n{''.join(lines)}")


def base_config(apiserver: Any, tmp_path: Path) -> dict[str, Any]:
    kubeconfig = tmp_path / "kubeconfig"
    apiserver.write_kubeconfig(kubeconfig)
    return {
        "kubeConfig": str(kubeconfig),
        # A namespace of its own: a GM with every feature on would otherwise reconcile
        # the jobs of tests running beside it on the shared server.
        "namespace": f"cli-{uuid.uuid4().hex[:10]}",
        "websocket": {"address": "127.0.0.1", "port": 0, "auth": "none"},
        "metrics": {"address": "127.0.0.1", "port": 0},
        "features": {"incremental_learning": {"enabled": False}},
    }


def _communicate_or_dump(proc: subprocess.Popen[str], lines: list[str], timeout: float) -> str:
    """The GM's remaining output once it exits; if it does not, fail with the stack of
    every thread (SIGUSR1, see the CLI) so a hang says where it is."""
    try:
        out, _ = proc.communicate(timeout=timeout)
        return out
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)
        time.sleep(1)
        proc.kill()
        out, _ = proc.communicate()
        raise AssertionError(
            f"the GM did not stop within {timeout:g} s; output and thread stacks:\n"
            + "".join(lines)
            + out
        ) from None


def test_runs_serves_health_and_stops_cleanly_on_sigterm(apiserver: Any, tmp_path: Path) -> None:
    config = base_config(apiserver, tmp_path)
    config["features"] = {}  # every installed feature runs
    proc = start_gm(config, tmp_path)
    lines: list[str] = []
    try:
        port = int(read_until(proc, r"serving /metrics.* on 127\.0\.0\.1:(\d+)", lines)[1])
        read_until(proc, r"sedna-gm started", lines)
        base = f"http://127.0.0.1:{port}"
        with urllib.request.urlopen(base + "/healthz", timeout=5) as r:
            assert r.status == 200
        with urllib.request.urlopen(base + "/readyz", timeout=5) as r:
            body = r.read().decode()
        assert "[+]informer-sync ok" in body
        assert "[+]websocket ok" in body
        with urllib.request.urlopen(base + "/metrics", timeout=5) as r:
            metrics = r.read().decode()
        assert "lc_connected_nodes" in metrics
        # The features' controllers report on the GM's registry under controller-runtime's names.
        assert 'workqueue_depth{name="IncrementalLearningJob"}' in metrics
        assert "workqueue_adds_total" in metrics
        assert "# TYPE controller_reconcile_time_seconds histogram" in metrics
        proc.send_signal(signal.SIGTERM)
        out = _communicate_or_dump(proc, lines, 30)
    finally:
        if proc.poll() is None:
            proc.kill()
    lines.append(out)
    assert proc.returncode == 0, "".join(lines)
    assert "received SIGTERM, stopping" in out
    assert "Traceback" not in "".join(lines)


def test_sigusr1_dumps_every_thread_and_the_gm_goes_on(apiserver: Any, tmp_path: Path) -> None:
    proc = start_gm(base_config(apiserver, tmp_path), tmp_path)
    lines: list[str] = []
    try:
        read_until(proc, r"sedna-gm started", lines)
        proc.send_signal(signal.SIGUSR1)
        read_until(proc, r'File ".*manager\.py", line \d+ in run', lines)
        proc.send_signal(signal.SIGTERM)
        out = _communicate_or_dump(proc, lines, 30)
    finally:
        if proc.poll() is None:
            proc.kill()
    dump = "".join(lines)
    assert "Thread 0x" in dump and "informer" in dump, dump
    assert proc.returncode == 0, dump + out


def test_sigint_also_exits_zero_and_json_logs_are_one_object_per_line(
    apiserver: Any, tmp_path: Path
) -> None:
    config = base_config(apiserver, tmp_path)
    config["logging"] = {"format": "json", "level": "DEBUG"}
    proc = start_gm(config, tmp_path)
    lines: list[str] = []
    try:
        read_until(proc, r"sedna-gm started", lines)
        proc.send_signal(signal.SIGINT)
        out = _communicate_or_dump(proc, lines, 30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0
    bad = [x for x in (*lines, *out.splitlines()) if x.strip() and not x.startswith("{")]
    assert not bad, "\n".join(bad)
    records = [json.loads(line) for line in (*lines, *out.splitlines()) if line.strip()]
    assert {"time", "level", "message"} <= set(records[0])
    assert any(r["message"] == "received SIGINT, stopping" for r in records)
    # Libraries' standard-logging records (websockets, asyncio at DEBUG) arrive as JSON too.
    libraries = ("websockets", "asyncio", "urllib3", "kubernetes")
    assert any(r["logger"].startswith(libraries) for r in records), {r["logger"] for r in records}


def test_without_embedded_nothing_of_it_is_imported(apiserver: Any, tmp_path: Path) -> None:
    """The GM's own modules never pull in the in-process API server or the stand-ins."""
    config = base_config(apiserver, tmp_path)
    config["features"] = {}  # every installed feature on
    path = tmp_path / "gm.yaml"
    path.write_text(yaml.safe_dump(config))
    probe = (
        "import sys, threading\n"
        "from sedna.runtime.config import load_config\n"
        "from sedna.manager import Manager\n"
        f"m = Manager(load_config({str(path)!r}))\n"
        "m.start(); m.stop()\n"
        "loaded = sorted(n for n in sys.modules if n.startswith('sedna.embedded'))\n"
        "print('EMBEDDED:', loaded)\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "EMBEDDED: []" in proc.stdout


def test_no_cluster_is_one_line_and_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "gm.yaml"
    path.write_text("metrics:\n  enabled: false\n")  # no kubeConfig, no master
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    env.update(HOME=str(tmp_path), KUBECONFIG=str(tmp_path / "none"))
    proc = subprocess.run(
        [sys.executable, "-m", "sedna.cli", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("sedna-gm: ")]
    assert errors == [
        "sedna-gm: cannot configure the Kubernetes client: no kubeConfig or master configured, "
        "in-cluster config failed (Service host/port is not set.) and the default kubeconfig "
        "failed (Invalid kube-config file. No configuration found.)"
    ]
