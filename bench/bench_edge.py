"""Edge fan-out: many LCs over the real websocket, token auth on, one of them stalled,
while jobs reconcile.

The GM runs in a child process: the real ``Manager`` with the IncrementalLearningJob
feature (its controllers, informers and message layer: the websocket server, per-node
queues, bearer-token auth), against the embedded API server in a second child process.
N LCs (asyncio websocket clients, each with its token and node name) run in a third.
A fourth creates IncrementalLearningJobs (Sedna's sample, renamed) at ``--job-rate``
per second from the moment the LCs are connected until the end, so the GM's
controllers reconcile (inference pod, status, the job's downstream message to its
node) all through the fan-out; the jobs created and the inference pods the GM made in
each phase are reported beside the messages. Phases, at one tenth, one third and the
whole of the size (``--fractions``; 1,000 LCs and 20,000 messages):

1. idle: GM RSS before and after the N connections -> bytes per idle connection;
2. fan-out: M downstream messages (a Model object, a distinct name each, so nothing
   coalesces) spread round-robin over the nodes at ``--rate`` per second; every
   receipt is checked against what was sent (lost, duplicated) and timed from the
   ``send()`` call to its receipt (both processes read CLOCK_MONOTONIC);
3. stalled: one LC stops reading (its client reads no more frames, so its socket
   fills), it gets a flood of 3,000 messages of 8 KiB besides its share, and the M
   messages are sent again: the other LCs' p50/p99, the stalled node's queue depth
   and the GM's RSS growth over the phase are reported.

The idle RSS is measured before the first job is created (the job caches grow with the
jobs, not with the connections). ``--job-rate 0`` runs the message layer alone, as
before. kopf and the lean loop have no edge side, so no figure here.

Run: ``python bench/bench_edge.py [--lcs 1000] [--messages 20000] [--rate 4000]
[--job-rate 40] [--fractions 0.1,0.333,1]``. Writes ``bench/results/edge.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gc
import json
import multiprocessing as mp
import os
import platform
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import bench_reconcile  # bench/: the API server, the sample job and its Models/Dataset
import embedded_server

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results" / "edge.json"
TOKEN = "bench-token-0123456789abcdef"
FLOOD = 3000
FLOOD_BYTES = 8 * 1024
MIB = 1024 * 1024


def _rss() -> int:
    gc.collect()
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def _node(i: int) -> str:
    return f"edge-{i:04d}"


def _model(name: str, seq: int, blob: str = "") -> dict[str, Any]:
    return {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "Model",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"url": "/model/frozen.pb", "format": "pb", "seq": seq, "blob": blob},
        "sent": time.perf_counter(),
    }


# -- the GM side ------------------------------------------------------------------------


def _manager(url: str, ns: str, token_file: str) -> tuple[Any, Any]:
    """The GM with the IncrementalLearningJob feature; returns (manager, its message layer)."""
    import sedna_incremental_learning.plugin as il_plugin
    from dependency_injector import providers

    from sedna.manager import Manager
    from sedna.plugins.loader import discover_plugins
    from sedna.runtime import GMConfig, RuntimeContainer

    features: dict[str, Any] = {
        p.name: {"enabled": False} for p in discover_plugins() if p.name != il_plugin.FEATURE_NAME
    }
    features[il_plugin.FEATURE_NAME] = {"workers": 2}
    config = GMConfig.model_validate(
        {
            "namespace": ns,
            "websocket": {
                "address": "127.0.0.1",
                "port": 0,
                "auth": "token",
                "tokenFile": token_file,
            },
            "metrics": {"enabled": False},
            "features": features,
        }
    )
    container = RuntimeContainer(config=config)
    container.api_client.override(providers.Object(embedded_server.client(url)))
    manager = Manager(
        config, container=container, extra_plugins={il_plugin.FEATURE_NAME: il_plugin}
    )
    manager.start()
    return manager, container.message_layer()


def _gm(cmd_q: Any, rep_q: Any, url: str, ns: str) -> None:
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level="ERROR")  # the flood's drop warnings are expected
    from sedna.runtime.config import WebsocketConfig
    from sedna.runtime.messaging import MessageLayer
    from sedna.runtime.metrics import Metrics

    manager = None
    if url:
        with tempfile.NamedTemporaryFile("w", suffix=".token", delete=False) as f:
            f.write(TOKEN)
        manager, layer = _manager(url, ns, f.name)
    else:
        layer = MessageLayer(
            WebsocketConfig(address="127.0.0.1", port=0, auth="token"),
            metrics=Metrics(),
            token_provider=lambda: [TOKEN],
        )
        layer.start()
    rep_q.put({"port": layer.port, "rss": _rss()})
    while (cmd := cmd_q.get()) is not None:
        op = cmd["op"]
        if op == "rss":
            rep_q.put({"rss": _rss(), "connected": len(layer.connected_nodes())})
        elif op == "send":
            nodes, count, rate, tag = cmd["nodes"], cmd["count"], cmd["rate"], cmd["tag"]
            start = time.perf_counter()
            for i in range(count):
                due = start + i / rate
                delay = due - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                layer.send(_node(i % nodes), "insert", _model(f"{tag}-{i}", i))
            rep_q.put({"sent": count, "seconds": round(time.perf_counter() - start, 2)})
        elif op == "flood":
            blob = "x" * FLOOD_BYTES
            for i in range(FLOOD):
                layer.send(cmd["node"], "insert", _model(f"flood-{i}", i, blob))
            rep_q.put({"flooded": FLOOD})
        elif op == "depth":
            rep_q.put({"depth": layer.queue_depth(cmd["node"])})
    if manager is not None:
        manager.stop()
    else:
        layer.stop()


# -- the reconcile load -----------------------------------------------------------------


def _jobs(url: str, ns: str, rate: float, stop: Any, done_q: Any) -> None:
    """Create jobs at `rate` per second until stop is set; report how many."""
    from sedna.runtime.kube import INCREMENTAL_LEARNING_JOBS, KubeClient

    client = KubeClient(embedded_server.client(url)).resource(INCREMENTAL_LEARNING_JOBS)
    template = bench_reconcile._sample("incrementallearningjob_v1alpha1.yaml")
    start = time.perf_counter()
    i = 0
    while not stop.is_set():
        delay = start + i / rate - time.perf_counter()
        if delay > 0:
            stop.wait(delay)
            continue
        job = copy.deepcopy(template)
        job["metadata"]["name"] = f"job-{i:05d}"
        client.create(ns, job)
        i += 1
    done_q.put(i)


def _reconciled(url: str, ns: str) -> dict[str, int]:
    """Jobs in ns, and the inference pods the GM created for them."""
    import kubernetes

    api = embedded_server.client(url)
    pods = kubernetes.client.CoreV1Api(api).list_namespaced_pod(ns).items
    jobs = kubernetes.client.CustomObjectsApi(api).list_namespaced_custom_object(
        "sedna.io", "v1alpha1", ns, "incrementallearningjobs"
    )["items"]
    return {"jobs": len(jobs), "pods": len(pods)}


# -- the LC side ------------------------------------------------------------------------


def _lcs(port: int, n: int, cmd_q: Any, rep_q: Any) -> None:
    import base64

    import orjson
    from websockets.asyncio.client import connect

    received: dict[str, list[tuple[str, float]]] = {}
    stalled: set[str] = set()
    lock = threading.Lock()

    async def one(i: int, gate: asyncio.Semaphore, conns: list[Any]) -> None:
        node = _node(i)
        async with gate:
            ws = await connect(
                f"ws://127.0.0.1:{port}/",
                additional_headers={"Node-Name": node, "Authorization": f"Bearer {TOKEN}"},
                open_timeout=60,
                max_size=None,
                max_queue=4,  # a stalled client stops reading its socket after 4 frames
                compression=None,
                ping_interval=None,
            )
        conns.append(ws)
        await ws.send('{"namespace":"","resourceKind":"","resourceName":"","operation":""}')
        got = received.setdefault(node, [])
        async for raw in ws:
            now = time.perf_counter()
            doc = orjson.loads(raw)
            obj = orjson.loads(base64.b64decode(doc["content"]))
            got.append((obj["metadata"]["name"], now - obj["sent"]))
            while node in stalled:
                await asyncio.sleep(3600)

    async def main() -> None:
        gate = asyncio.Semaphore(50)
        conns: list[Any] = []
        tasks = [asyncio.create_task(one(i, gate, conns)) for i in range(n)]
        while len(conns) < n:
            await asyncio.sleep(0.05)
        rep_q.put({"connected": n})
        loop = asyncio.get_running_loop()
        while (cmd := await loop.run_in_executor(None, cmd_q.get)) is not None:
            if cmd["op"] == "stall":
                stalled.add(cmd["node"])
                rep_q.put({"stalled": cmd["node"]})
            elif cmd["op"] == "count":
                with lock:
                    rep_q.put(
                        {"count": sum(len(v) for k, v in received.items() if k not in stalled)}
                    )
            elif cmd["op"] == "collect":
                with lock:
                    out = {k: list(v) for k, v in received.items()}
                    for v in received.values():
                        v.clear()
                rep_q.put({"received": out})
        for t in tasks:
            t.cancel()
        for ws in conns:
            await ws.close()

    asyncio.run(main())


# -- the driver -------------------------------------------------------------------------


def _pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


def _wait_count(lc_cmd: Any, lc_rep: Any, want: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    count = 0
    while time.monotonic() < deadline:
        lc_cmd.put({"op": "count"})
        count = lc_rep.get(timeout=30)["count"]
        if count >= want:
            break
        time.sleep(0.25)
    return count


def _check(
    received: dict[str, list[tuple[str, float]]], tag: str, count: int, nodes: int, skip: str | None
) -> dict[str, Any]:
    want = {f"{tag}-{i}": _node(i % nodes) for i in range(count)}
    seen: dict[str, int] = {}
    lat: list[float] = []
    wrong_node = 0
    for node, items in received.items():
        if node == skip:
            continue
        for name, latency in items:
            if not name.startswith(tag + "-"):
                continue
            seen[name] = seen.get(name, 0) + 1
            lat.append(latency)
            if want.get(name) != node:
                wrong_node += 1
    expected = [k for k, v in want.items() if v != skip]
    lost = sum(1 for k in expected if k not in seen)
    dup = sum(c - 1 for c in seen.values() if c > 1)
    return {
        "delivered": len(seen),
        "expected": len(expected),
        "lost": lost,
        "duplicated": dup,
        "wrong_node": wrong_node,
        "p50_ms": round(_pct(lat, 50) * 1e3, 2),
        "p99_ms": round(_pct(lat, 99) * 1e3, 2),
        "max_ms": round(max(lat, default=float("nan")) * 1e3, 2),
    }


def _window(
    url: str, ns: str, gm_pid: int, before: dict[str, int], cpu0: float, t0: float
) -> dict[str, float]:
    """What the GM reconciled during a phase, and the CPU it spent on everything."""
    after = _reconciled(url, ns)
    return {
        "seconds": round(time.perf_counter() - t0, 2),
        "jobs_created": after["jobs"] - before["jobs"],
        "inference_pods_created": after["pods"] - before["pods"],
        "gm_cpu_seconds": round(bench_reconcile._cpu_seconds(gm_pid) - cpu0, 2),
    }


def _run(ctx: Any, n: int, m: int, rate: float, url: str, job_rate: float) -> dict[str, Any]:
    ns = f"edge-bench-{n}-{os.getpid()}"
    if url:
        bench_reconcile._prepare(url, ns)
    gm_cmd, gm_rep, lc_cmd, lc_rep = ctx.Queue(), ctx.Queue(), ctx.Queue(), ctx.Queue()
    gm = ctx.Process(target=_gm, args=(gm_cmd, gm_rep, url, ns), daemon=True)
    gm.start()
    first = gm_rep.get(timeout=120)
    port, rss0 = first["port"], first["rss"]
    lcs = ctx.Process(target=_lcs, args=(port, n, lc_cmd, lc_rep), daemon=True)
    lcs.start()
    stop_jobs, jobs_done = ctx.Event(), ctx.Queue()
    writer = None
    try:
        lc_rep.get(timeout=300)
        time.sleep(1.0)
        gm_cmd.put({"op": "rss"})
        idle = gm_rep.get(timeout=30)
        out: dict[str, Any] = {
            "lcs": n,
            "messages": m,
            "rate_per_s": rate,
            "job_rate_per_s": job_rate if url else 0,
            "connected": idle["connected"],
            "rss_idle_mib": round(idle["rss"] / MIB, 1),
            "bytes_per_idle_connection": round((idle["rss"] - rss0) / n),
        }
        if url and job_rate > 0:
            writer = ctx.Process(
                target=_jobs, args=(url, ns, job_rate, stop_jobs, jobs_done), daemon=True
            )
            writer.start()
            time.sleep(2.0)  # the controllers are busy before the first message
        before = _reconciled(url, ns) if url else None
        cpu0 = bench_reconcile._cpu_seconds(gm.pid or 0)
        t0 = time.perf_counter()
        # 2. fan-out
        gm_cmd.put({"op": "send", "nodes": n, "count": m, "rate": rate, "tag": "a"})
        sent = gm_rep.get(timeout=600)
        _wait_count(lc_cmd, lc_rep, m, 120)
        lc_cmd.put({"op": "collect"})
        out["fanout"] = _check(lc_rep.get(timeout=60)["received"], "a", m, n, None)
        out["fanout"]["send_seconds"] = sent["seconds"]
        if before is not None:
            out["fanout"]["while_reconciling"] = _window(url, ns, gm.pid or 0, before, cpu0, t0)
        gm_cmd.put({"op": "rss"})
        rss_before = gm_rep.get(timeout=30)["rss"]
        # 3. one LC stalled and flooded
        before = _reconciled(url, ns) if url else None
        cpu0 = bench_reconcile._cpu_seconds(gm.pid or 0)
        t0 = time.perf_counter()
        victim = _node(0)
        lc_cmd.put({"op": "stall", "node": victim})
        lc_rep.get(timeout=30)
        gm_cmd.put({"op": "flood", "node": victim})
        gm_rep.get(timeout=120)
        gm_cmd.put({"op": "send", "nodes": n, "count": m, "rate": rate, "tag": "b"})
        sent = gm_rep.get(timeout=600)
        expected_others = sum(1 for i in range(m) if i % n != 0)
        _wait_count(lc_cmd, lc_rep, expected_others, 120)
        lc_cmd.put({"op": "collect"})
        stalled = _check(lc_rep.get(timeout=60)["received"], "b", m, n, victim)
        gm_cmd.put({"op": "rss"})
        rss_after = gm_rep.get(timeout=30)["rss"]
        gm_cmd.put({"op": "depth", "node": victim})
        stalled["stalled_queue_depth"] = gm_rep.get(timeout=30)["depth"]
        stalled["gm_rss_growth_mib"] = round((rss_after - rss_before) / MIB, 1)
        stalled["send_seconds"] = sent["seconds"]
        if before is not None:
            stalled["while_reconciling"] = _window(url, ns, gm.pid or 0, before, cpu0, t0)
        out["stalled"] = stalled
        if url:
            stop_jobs.set()
            if writer is not None:
                out["jobs_created"] = jobs_done.get(timeout=60)
            time.sleep(2.0)
            out["reconciled_at_end"] = _reconciled(url, ns)
        return out
    finally:
        stop_jobs.set()
        lc_cmd.put(None)
        gm_cmd.put(None)
        for p in (lcs, gm, writer):
            if p is None:
                continue
            p.join(20)
            if p.is_alive():
                p.kill()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lcs", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--rate", type=float, default=4000.0, help="downstream sends per second")
    parser.add_argument(
        "--job-rate",
        type=float,
        default=40.0,
        help="jobs created per second while the messages go out (0: no reconcile load)",
    )
    parser.add_argument("--fractions", default="0.1,0.333,1")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    results: dict[str, Any] = {}
    url, server, stop_server = "", None, ctx.Event()
    if args.job_rate > 0:
        url_q = ctx.Queue()
        server = ctx.Process(target=bench_reconcile._serve, args=(url_q, stop_server))
        server.start()
        url = url_q.get(timeout=120)[0]
    try:
        for frac in (float(f) for f in args.fractions.split(",") if f):
            n, m = max(2, round(args.lcs * frac)), max(2, round(args.messages * frac))
            r = results[str(n)] = _run(ctx, n, m, args.rate, url, args.job_rate)
            print(f"{n} LCs: {r}", file=sys.stderr, flush=True)
    finally:
        stop_server.set()
        if server is not None:
            server.join(30)
    doc = {
        "benchmark": "edge",
        "results": results,
        "parameters": {
            "lcs": args.lcs,
            "messages": args.messages,
            "rate": args.rate,
            "job_rate": args.job_rate,
        },
        "load_average_at_end": os.getloadavg(),
        "command": " ".join(["python bench/bench_edge.py", *sys.argv[1:]]),
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
