"""Edge fan-out: many LCs over the real websocket, token auth on, one of them stalled.

The GM's message layer (``MessageLayer``: the websocket server, per-node queues,
bearer-token auth) runs in a child process; N LCs (asyncio websocket clients, each
with its token and node name) run in another. Phases, at one tenth, one third and the
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

The jobs' reconciles are not in this process (see bench_reconcile.py for their cost);
kopf and the lean loop have no edge side, so no figure here.

Run: ``python bench/bench_edge.py [--lcs 1000] [--messages 20000] [--rate 4000]
[--fractions 0.1,0.333,1]``. Writes ``bench/results/edge.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import multiprocessing as mp
import os
import platform
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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


def _gm(cmd_q: Any, rep_q: Any) -> None:
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level="ERROR")  # the flood's drop warnings are expected
    from sedna.runtime.config import WebsocketConfig
    from sedna.runtime.messaging import MessageLayer
    from sedna.runtime.metrics import Metrics

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
    layer.stop()


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


def _run(ctx: Any, n: int, m: int, rate: float) -> dict[str, Any]:
    gm_cmd, gm_rep, lc_cmd, lc_rep = ctx.Queue(), ctx.Queue(), ctx.Queue(), ctx.Queue()
    gm = ctx.Process(target=_gm, args=(gm_cmd, gm_rep), daemon=True)
    gm.start()
    first = gm_rep.get(timeout=60)
    port, rss0 = first["port"], first["rss"]
    lcs = ctx.Process(target=_lcs, args=(port, n, lc_cmd, lc_rep), daemon=True)
    lcs.start()
    try:
        lc_rep.get(timeout=300)
        time.sleep(1.0)
        gm_cmd.put({"op": "rss"})
        idle = gm_rep.get(timeout=30)
        out: dict[str, Any] = {
            "lcs": n,
            "messages": m,
            "rate_per_s": rate,
            "connected": idle["connected"],
            "rss_idle_mib": round(idle["rss"] / MIB, 1),
            "bytes_per_idle_connection": round((idle["rss"] - rss0) / n),
        }
        # 2. fan-out
        gm_cmd.put({"op": "send", "nodes": n, "count": m, "rate": rate, "tag": "a"})
        sent = gm_rep.get(timeout=600)
        _wait_count(lc_cmd, lc_rep, m, 120)
        lc_cmd.put({"op": "collect"})
        out["fanout"] = _check(lc_rep.get(timeout=60)["received"], "a", m, n, None)
        out["fanout"]["send_seconds"] = sent["seconds"]
        gm_cmd.put({"op": "rss"})
        rss_before = gm_rep.get(timeout=30)["rss"]
        # 3. one LC stalled and flooded
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
        out["stalled"] = stalled
        return out
    finally:
        lc_cmd.put(None)
        gm_cmd.put(None)
        for p in (lcs, gm):
            p.join(20)
            if p.is_alive():
                p.kill()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lcs", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--rate", type=float, default=4000.0, help="downstream sends per second")
    parser.add_argument("--fractions", default="0.1,0.333,1")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    results: dict[str, Any] = {}
    for frac in (float(f) for f in args.fractions.split(",") if f):
        n, m = max(2, round(args.lcs * frac)), max(2, round(args.messages * frac))
        r = results[str(n)] = _run(ctx, n, m, args.rate)
        print(f"{n} LCs: {r}", file=sys.stderr, flush=True)
    doc = {
        "benchmark": "edge",
        "results": results,
        "parameters": {"lcs": args.lcs, "messages": args.messages, "rate": args.rate},
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
