"""Report to pod: an LC's Train ``ready`` report -> the train worker pod at the API.

The API server and the GM (the real Manager, IL feature, token auth on the LC
websocket) each run in a child process, as in ``bench_reconcile.py``. N jobs (Sedna's
sample, renamed) are created and left at ``Train/Waiting``; once the GM is idle, one LC
(the sample Dataset's node, over the real websocket with its token) sends each job's
Train ``ready`` report at ``--rate`` reports per second. A raw pod watch in this
process notes when each job's train pod is ADDED; the latency runs from the report's
send to that event (both on CLOCK_MONOTONIC), so it includes the watch's delivery.
Reported: p50, p99 and max over the N jobs, at one tenth, one third and the whole of
``--jobs``; the reports slower than 50 ms grouped in bursts by when they were sent; the
CPU per report of the GM and of the API server; and every cyclic-GC pause of 5 ms or
more in either process during the reports (the heap settler's own marked). The bursts
at 1 000 jobs were full (gen-2) collections: one of 222 ms in the API server's process
began as a burst of slow reports did; with both processes running the heap settler
(``sedna.heap``, as the CLI does) no such collection happens during the reports.
``BENCH_NO_SETTLE=1`` runs without it; ``BENCH_PROFILE=FILE`` writes a cProfile of
the GM's run (every thread) to FILE.

Run: ``python bench/bench_report.py [--jobs 1000] [--rate 100] [--fractions
0.1,0.333,1]``. Writes ``bench/results/report.json``.
"""

from __future__ import annotations

import argparse
import base64
import importlib.util
import json
import multiprocessing as mp
import os
import platform
import socket
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import bench_reconcile as br  # noqa: E402  (the server, the workload, the watches)

RESULTS = BENCH / "results" / "report.json"
TOKEN = "bench-report-token-0123456789"
DS_NODE = "edge0"  # the sample Dataset's node: its LC reports the Train stage
LABEL = "incrementallearningjob.sedna.io/"


def _api_server(**kwargs: Any) -> Any:
    """The embedded API server as the other benches start it (HTTPS and a token where
    ``bench/embedded_server.py`` provides them)."""
    if importlib.util.find_spec("embedded_server") is not None:
        import embedded_server

        return embedded_server.server(**kwargs)
    from sedna.embedded.apiserver import APIServer

    return APIServer(**kwargs)


def _api_client(url: str) -> Any:
    """A client of that server (its token and CA where it has them)."""
    if importlib.util.find_spec("embedded_server") is not None:
        import embedded_server

        return embedded_server.client(url)
    from sedna.runtime.kube import api_client_for_url

    return api_client_for_url(url)


class _GCPauses:
    """Cyclic-GC pauses of this process of at least 5 ms, on CLOCK_MONOTONIC (as the
    bench's send and receive times), so they can be laid beside the slow reports."""

    def __init__(self) -> None:
        import gc

        # (start, ms, generation, by the heap settler: 1, else 0)
        self.pauses: list[tuple[float, float, int, int]] = []
        self._t0 = 0.0
        gc.callbacks.append(self._on)

    def _on(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
        elif (ms := (time.perf_counter() - self._t0) * 1e3) >= 5 and len(self.pauses) < 10_000:
            ours = int(threading.current_thread().name == "heap-settler")
            self.pauses.append((self._t0, round(ms, 1), int(info["generation"]), ours))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _gm(url: str, ns: str, port: int, token_file: str, ready_q: Any, stop: Any) -> None:
    from loguru import logger

    logger.remove()
    logger.add(open(os.devnull, "w"), level="INFO")  # noqa: SIM115  # production level
    logger.add(sys.stderr, level="ERROR")

    import sedna_incremental_learning.plugin as il_plugin
    from dependency_injector import providers

    from sedna.manager import Manager
    from sedna.plugins.loader import discover_plugins
    from sedna.runtime import GMConfig, RuntimeContainer

    features: dict[str, Any] = {
        p.name: {"enabled": False} for p in discover_plugins() if p.name != il_plugin.FEATURE_NAME
    }
    features[il_plugin.FEATURE_NAME] = {"workers": 4}
    config = GMConfig.model_validate(
        {
            "namespace": ns,
            "websocket": {
                "address": "127.0.0.1",
                "port": port,
                "auth": "token",
                "tokenFile": token_file,
            },
            "metrics": {"enabled": False},
            "features": features,
        }
    )
    container = RuntimeContainer(config=config)
    container.api_client.override(providers.Object(_api_client(url)))
    manager = Manager(
        config, container=container, extra_plugins={il_plugin.FEATURE_NAME: il_plugin}
    )
    profile = os.environ.get("BENCH_PROFILE")  # a file: the GM's whole run, every thread
    from thread_profiles import profile_threads  # bench/, as embedded_server

    merged = profile_threads() if profile else None
    manager.start()
    from sedna.heap import HeapSettler

    settler = HeapSettler()  # as the CLI runs it once the manager has started
    if not os.environ.get("BENCH_NO_SETTLE"):
        settler.start()
    ready_q.put(os.getpid())
    pauses = _GCPauses()
    stop.wait()
    ready_q.put(pauses.pauses)
    if merged is not None:
        assert profile
        merged().dump_stats(profile)
    settler.stop()
    manager.stop()


def _frame(ns: str, name: str) -> str:
    payload = {
        "phase": "train",
        "status": "ready",
        "input": {
            "models": [{"format": "ckpt", "url": "/model/frozen.pb"}],
            "dataURL": "/data/train/1.txt",
            "outputDir": "/output/train/1",
        },
    }
    header = {
        "namespace": ns,
        "resourceKind": "incrementallearningjob",
        "resourceName": name,
        "operation": "status",
    }
    content = base64.b64encode(json.dumps(payload).encode()).decode()
    return json.dumps({"header": header, "content": content}) + "\n"


def _serve(url_q: Any, stop: Any) -> None:
    """The API server, as bench_reconcile's but with a history of 5 000 events (its
    cyclic GC pauses grow with its heap; see the module doc)."""
    br._quiet_logs()
    # no schema checks: the jobs are bench_reconcile's (PyYAML reads the sample's
    # `02:00` timer as a number)
    srv = _api_server(host="127.0.0.1", port=0, history=5000, schema_validation=False)
    srv.start()
    srv.install_crds_from_dir(br.CRDS)
    from sedna.heap import HeapSettler

    # the embedded mode's server shares the GM's process, and so its settler
    settler = HeapSettler()
    if not os.environ.get("BENCH_NO_SETTLE"):
        settler.start()
    pauses = _GCPauses()
    url_q.put((srv.url, os.getpid()))
    stop.wait()
    url_q.put(pauses.pauses)
    settler.stop()
    srv.stop()


def _pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))] if values else float("nan")


def _bursts(times: list[float], gap: float = 0.1) -> list[list[float]]:
    """Sorted send times grouped where they lie within ``gap`` s of each other:
    [first, last, how many] per group (seconds into the reports)."""
    out: list[list[float]] = []
    for t in times:
        if out and t - out[-1][1] <= gap:
            out[-1][1] = round(t, 2)
            out[-1][2] += 1
        else:
            out.append([round(t, 2), round(t, 2), 1])
    return out


def _in_window(
    pauses: list[tuple[float, float, int, int]], window: tuple[float, float]
) -> list[list[float]]:
    """The pauses during the reports: [seconds into the reports, ms, generation,
    1 if the heap settler's]."""
    lo, hi = window
    return [[round(t - lo, 2), ms, gen, ours] for t, ms, gen, ours in pauses if lo <= t <= hi]


def _run(ctx: Any, url: str, server_pid: int, n: int, rate: float) -> dict[str, Any]:
    from websockets.sync.client import connect

    from sedna.runtime.kube import INCREMENTAL_LEARNING_JOBS, PODS, KubeClient

    ns = f"report-{n}-{int(time.time()) % 100000}"
    br._prepare(url, ns)
    port = _free_port()
    with tempfile.NamedTemporaryFile("w", suffix=".token", delete=False) as f:
        f.write(TOKEN)
    ready_q, stop, done_q = ctx.Queue(), ctx.Event(), ctx.Queue()
    gm = ctx.Process(target=_gm, args=(url, ns, port, f.name, ready_q, stop))
    gm.start()
    gm_pid = ready_q.get(timeout=120)
    kube = KubeClient(_api_client(url))
    waiting: set[str] = set()
    created: dict[str, float] = {}
    lock = threading.Lock()
    all_waiting = threading.Event()

    def on_job(job: dict[str, Any]) -> None:
        conds = (job.get("status") or {}).get("conditions") or []
        if conds and conds[-1].get("stage") == "Train" and conds[-1].get("type") == "Waiting":
            with lock:
                waiting.add(job["metadata"]["name"])
                if len(waiting) >= n:
                    all_waiting.set()

    def on_pod(pod: dict[str, Any]) -> None:
        labels = pod["metadata"].get("labels") or {}
        if labels.get(f"{LABEL}worker-type") == "train":
            with lock:
                created.setdefault(labels.get(f"{LABEL}name", ""), time.perf_counter())

    watch_stop = threading.Event()
    streams = [
        br._watch(kube.resource(INCREMENTAL_LEARNING_JOBS), ns, on_job, watch_stop),
        br._watch(kube.resource(PODS), ns, on_pod, watch_stop),
    ]
    try:
        writer = ctx.Process(target=br._write, args=(url, ns, n, 4, done_q))
        writer.start()
        done_q.get(timeout=300)
        writer.join()
        if not all_waiting.wait(300):
            raise SystemExit(f"only {len(waiting)} of {n} jobs reached Train/Waiting")
        br._settled_cpu(gm_pid, limit=30)  # the first syncs' Events are posted
        lc = connect(
            f"ws://127.0.0.1:{port}/",
            additional_headers={"Node-Name": DS_NODE, "Authorization": f"Bearer {TOKEN}"},
            open_timeout=10,
            max_size=None,
            compression=None,
            legacy=True,
        )
        drain = threading.Thread(target=lambda: [None for _ in lc], daemon=True)
        drain.start()  # the GM's downstream inserts to this node are read and ignored
        lc.send('{"namespace":"","resourceKind":"","resourceName":"","operation":""}')
        time.sleep(1.0)
        names = [f"job-{i:05d}" for i in range(n)]
        sent: dict[str, float] = {}
        cpu0 = (br._cpu_seconds(gm_pid), br._cpu_seconds(server_pid))
        start = time.perf_counter()
        for i, name in enumerate(names):
            delay = start + i / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            frame = _frame(ns, name)
            sent[name] = time.perf_counter()
            lc.send(frame)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with lock:
                if len(created) >= n:
                    break
            time.sleep(0.1)
        cpu1 = (br._cpu_seconds(gm_pid), br._cpu_seconds(server_pid))
        lc.close()
        window = (start, time.perf_counter())
        with lock:
            lat = [created[k] - sent[k] for k in names if k in created]
            slow = sorted(
                sent[k] - start for k in names if k in created and created[k] - sent[k] > 0.05
            )
        stop.set()
        gm_pauses = ready_q.get(timeout=30)
        return {
            "jobs": n,
            "rate_per_s": rate,
            "pods_made": len(lat),
            "p50_ms": round(_pct(lat, 50) * 1e3, 1),
            "p99_ms": round(_pct(lat, 99) * 1e3, 1),
            "max_ms": round(max(lat, default=float("nan")) * 1e3, 1),
            # when the slow ones were sent (seconds into the reports): bursts or spread
            "over_50ms": len(slow),
            "over_50ms_bursts": _bursts(slow),
            # CPU per report (each: a status write, the pod, their events and watches)
            "cpu_ms_per_report": {
                "gm": round((cpu1[0] - cpu0[0]) / n * 1e3, 2),
                "apiserver": round((cpu1[1] - cpu0[1]) / n * 1e3, 2),
            },
            "gc_pauses_gm": _in_window(gm_pauses, window),
            "window": window,
        }
    finally:
        watch_stop.set()
        for s in streams:
            s.close()
        stop.set()
        gm.join(30)
        if gm.is_alive():
            gm.kill()
        os.unlink(f.name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=100.0, help="reports per second")
    parser.add_argument("--fractions", default="0.1,0.333,1")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    br._quiet_logs()
    ctx = mp.get_context("spawn")
    url_q, server_stop = ctx.Queue(), ctx.Event()
    server = ctx.Process(target=_serve, args=(url_q, server_stop), daemon=True)
    server.start()
    url, server_pid = url_q.get(timeout=120)
    results: dict[str, Any] = {}
    try:
        for frac in (float(x) for x in args.fractions.split(",") if x):
            n = max(1, round(args.jobs * frac))
            results[str(n)] = r = _run(ctx, url, server_pid, n, args.rate)
            print(f"{n} jobs: {r}", file=sys.stderr, flush=True)
    finally:
        server_stop.set()
        server_pauses = url_q.get(timeout=30)
        server.join(10)
    for r in results.values():
        r["gc_pauses_server"] = _in_window(server_pauses, r["window"])
        del r["window"]
    doc = {
        "benchmark": "report",
        "results": results,
        "parameters": {"jobs": args.jobs, "rate": args.rate},
        "load_average_at_end": os.getloadavg(),
        "command": " ".join(["python bench/bench_report.py", *sys.argv[1:]]),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
