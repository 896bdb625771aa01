"""Idle watches against the embedded GM: memory per watch and the demo's progress.

Runs `sedna-gm --config config/gm.yaml` (a temp copy: own stateDir, free ports) as a
child process, waits for the incremental-learning demo to run, then counts the job's
new conditions over a window with no extra watches, opens `--watches` idle watches
(a label selector that matches nothing; `--clients` bearer tokens, each a client of
its own), waits until the server counts them open, and counts the conditions over
the same window again. RSS is the GM process's VmRSS (API server, controllers,
websocket and simulated nodes are all in it). Writes `bench/results/watches.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import platform
import secrets
import ssl
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import kubernetes
import yaml

PROJECT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results" / "watches.json"
JOB = ("default", "helmet-detection-demo")


def _write_config(tmp: Path, extra: dict[str, Any]) -> Path:
    cfg = yaml.safe_load((PROJECT / "config" / "gm.yaml").read_text())
    emb = cfg["embedded"]
    emb["stateDir"] = str(tmp / "state")
    emb["port"] = 0
    emb["apply"] = [str((PROJECT / "config" / p).resolve()) for p in emb.get("apply") or []]
    emb.update(extra)
    cfg["websocket"]["port"] = 0
    cfg["metrics"]["port"] = 0
    cfg["logging"] = {"level": "WARNING"}
    path = tmp / "gm.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def _wait(pred: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = pred()
        except Exception:
            value = None
        if value:
            return value
        time.sleep(0.2)
    raise SystemExit(f"timed out waiting for {what}")


class GM:
    def __init__(self, tmp: Path, extra: dict[str, Any]) -> None:
        self.state = tmp / "state"
        self.log = tmp / "gm.log"
        config = _write_config(tmp, extra)
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "sedna.cli", "--config", str(config)],
                cwd=PROJECT,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        kubeconfig = self.state / "kubeconfig"
        _wait(kubeconfig.exists, 120, "the kubeconfig")
        cfg = yaml.safe_load(kubeconfig.read_text())
        self.url = cfg["clusters"][0]["cluster"]["server"]
        self.token = cfg["users"][0]["user"]["token"]
        ca = tmp / "ca.crt"  # the kubeconfig's CA, which signs the serving certificate
        ca.write_bytes(
            base64.b64decode(cfg["clusters"][0]["cluster"]["certificate-authority-data"])
        )
        self.ca = str(ca)
        conf = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(str(kubeconfig), client_configuration=conf)
        self.api = kubernetes.client.ApiClient(conf)
        self.custom = kubernetes.client.CustomObjectsApi(self.api)

    def conditions(self, since: datetime | None = None) -> int:
        """The job's conditions (its list is capped at 50), or those set at `since` or later."""
        job = self.custom.get_namespaced_custom_object(
            "sedna.io", "v1alpha1", JOB[0], "incrementallearningjobs", JOB[1]
        )
        conds = (job.get("status") or {}).get("conditions") or []
        if since is None:
            return len(conds)
        floor = since.replace(microsecond=0)
        return sum(
            1
            for c in conds
            if datetime.fromisoformat(c["lastTransitionTime"].replace("Z", "+00:00")) > floor
        )

    def open_watches(self) -> float:
        params = self.api.param_serialize(
            "GET", "/metrics", header_params={"Accept": "text/plain"}, auth_settings=["BearerToken"]
        )
        text = self.api.call_api(*params).read().decode()
        for line in text.splitlines():
            if line.startswith('apiserver_longrunning_requests{verb="WATCH"}'):
                return float(line.rsplit(" ", 1)[1])
        return -1.0

    def stop(self) -> None:
        self.api.close()
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


async def _open(url: str, ca: str, tokens: list[str], n: int) -> tuple[list[Any], int]:
    """n idle watches, spread over the tokens; returns the open streams and the 429s."""
    u = urlparse(url)
    ctx = ssl.create_default_context(cafile=ca)
    ctx.check_hostname = False
    path = "/api/v1/namespaces/default/configmaps?watch=true&labelSelector=bench-idle%3Dnone"
    held: list[Any] = []
    refused = 0

    async def one(i: int) -> None:
        nonlocal refused
        reader, writer = await asyncio.open_connection(u.hostname, u.port, ssl=ctx)
        req = (
            f"GET {path} HTTP/1.1\r\nHost: {u.hostname}\r\n"
            f"Authorization: Bearer {tokens[i % len(tokens)]}\r\nAccept: application/json\r\n\r\n"
        )
        writer.write(req.encode())
        status = await reader.readline()
        if b" 200 " in status:
            held.append(writer)
        else:
            refused += 1
            writer.close()

    for start in range(0, n, 100):
        await asyncio.gather(*(one(i) for i in range(start, min(n, start + 100))))
    return held, refused


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--watches", type=int, default=2000)
    ap.add_argument("--clients", type=int, default=2, help="bearer tokens the watches use")
    ap.add_argument("--window", type=float, default=20.0, help="seconds of progress counted")
    ap.add_argument("--max-watches", type=int, default=0, help="embedded.maxWatches (0: default)")
    ap.add_argument("--max-per-client", type=int, default=0, help="maxWatchesPerClient")
    args = ap.parse_args()
    extra: dict[str, Any] = {}
    if args.max_watches:
        extra["maxWatches"] = args.max_watches
    if args.max_per_client:
        extra["maxWatchesPerClient"] = args.max_per_client
    with tempfile.TemporaryDirectory(prefix="sedna-bench-watches-") as tmp:
        gm = GM(Path(tmp), extra)
        try:
            result = _run(gm, args)
        finally:
            gm.stop()
    result.update(
        {
            "command": "python bench/bench_watches.py " + " ".join(sys.argv[1:]),
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        }
    )
    # one entry per variant (watches, clients), so a run of one keeps the others
    runs = json.loads(RESULTS.read_text()).get("runs", {}) if RESULTS.exists() else {}
    runs[f"{args.watches} watches, {args.clients} client(s)"] = result
    RESULTS.write_text(json.dumps({"benchmark": "watches", "runs": runs}, indent=2) + "\n")
    print(json.dumps(result, indent=2))


def _run(gm: GM, args: argparse.Namespace) -> dict[str, Any]:
    tokens = [secrets.token_urlsafe(24) for _ in range(args.clients)]  # not the GM's own
    extra_tokens = gm.state / "apiserver-tokens"
    extra_tokens.write_text("".join(t + "\n" for t in tokens))
    os.chmod(extra_tokens, 0o600)
    _wait(lambda: gm.conditions() >= 2, 120, "the demo job to start")
    time.sleep(3)  # let start-up settle before the baseline
    rss0 = _rss_kib(gm.proc.pid)
    c0 = datetime.now(UTC)
    time.sleep(args.window)
    idle_progress = gm.conditions(c0)
    loop = asyncio.new_event_loop()
    t0 = time.monotonic()
    held, refused = loop.run_until_complete(_open(gm.url, gm.ca, tokens, args.watches))
    open_s = time.monotonic() - t0
    base = gm.open_watches() - len(held)
    _wait(lambda: gm.open_watches() >= base + len(held), 60, "the watches counted open")
    time.sleep(2)
    rss1 = _rss_kib(gm.proc.pid)
    c1 = datetime.now(UTC)
    time.sleep(args.window)
    watched_progress = gm.conditions(c1)
    rss2 = _rss_kib(gm.proc.pid)
    for w in held:
        w.close()
    loop.run_until_complete(asyncio.sleep(0.5))
    _wait(lambda: gm.open_watches() <= base, 60, "the watches counted closed")
    rss3 = _rss_kib(gm.proc.pid)
    loop.close()
    opened = len(held)
    return {
        "watches_asked": args.watches,
        "clients": args.clients,
        "watches_open": opened,
        "watches_refused_429": refused,
        "open_seconds": round(open_s, 2),
        "rss_mib_before": round(rss0 / 1024, 1),
        "rss_mib_with_watches": round(rss1 / 1024, 1),
        "rss_mib_end_of_window": round(rss2 / 1024, 1),
        "rss_mib_after_close": round(rss3 / 1024, 1),
        "rss_kib_per_watch": round((rss1 - rss0) / opened, 1) if opened else None,
        "window_s": args.window,
        # new conditions of the demo job (stage transitions) in the window
        "job_conditions_in_window_idle": idle_progress,
        "job_conditions_in_window_with_watches": watched_progress,
    }


if __name__ == "__main__":
    main()
