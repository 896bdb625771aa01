"""LC reconnect: from an LC's dial to the last object routed to its node received.

An LC that restarts holds nothing; the GM replays everything routed to its node as
soon as the connection is up (`sedna.runtime.messaging.retained`). This measures that
replay over the real websocket: `--objects` objects are routed to one node (one
Dataset, two Models, the rest ~1.9 KB IncrementalLearningJobs), its LC connects, reads
everything, closes, and connects again `--reconnects` times; each round is timed from
the dial to the last of the node's objects read. `--other-nodes` further LCs, with as
many objects each, stay connected the whole time and must receive nothing during the
reconnects (no flooding of other nodes).

The LCs run in a child process (spawned, with their own interpreter and GIL), so the
figures are the GM side's. Run: `python bench/bench_reconnect.py [--objects 100]
[--reconnects 200] [--other-nodes 49]`. Prints the figures and writes
`bench/results/reconnect.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import platform
import statistics
import sys
import time
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from loguru import logger

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_messaging import HELLO, job

from sedna.runtime.config import WebsocketConfig
from sedna.runtime.messaging import MessageLayer
from sedna.runtime.metrics import Metrics

RESULTS = Path(__file__).resolve().parent / "results" / "reconnect.json"
NODE = "edge-restarting"


def node_objects(node: str, count: int) -> list[dict[str, Any]]:
    """What the controllers route to one node, sent jobs first (the replay reorders)."""
    meta = {"namespace": "default", "resourceVersion": "1"}
    out = [job(f"{node}-job-{i}", node) for i in range(count - 3)]
    for name, url in (("initial-model", "/models/base"), ("deploy-model", "/models/d.pb")):
        out.append(
            {
                "apiVersion": "sedna.io/v1alpha1",
                "kind": "Model",
                "metadata": {"name": f"{node}-{name}", **meta},
                "spec": {"url": url, "format": "pb"},
            }
        )
    out.append(
        {
            "apiVersion": "sedna.io/v1alpha1",
            "kind": "Dataset",
            "metadata": {"name": f"{node}-dataset", **meta},
            "spec": {"url": "/data/train.txt", "format": "txt", "nodeName": node},
        }
    )
    return out


# ---- the LC side (child process) ---------------------------------------------------------


def _lc_process(
    port: int, others: list[str], objects: int, reconnects: int, pipe: Connection
) -> None:
    from websockets.asyncio.client import connect

    url = f"ws://127.0.0.1:{port}/"

    async def read_all(ws: Any, n: int) -> list[str]:
        kinds: list[str] = []
        while len(kinds) < n:
            doc = json.loads(await ws.recv())
            kinds.append(doc["header"]["resourceKind"])
        return kinds

    async def other(node: str, counts: dict[str, int], stop: asyncio.Event) -> None:
        async with connect(url, additional_headers={"Node-Name": node}, compression=None) as ws:
            await ws.send(HELLO)
            while not stop.is_set():
                try:
                    await asyncio.wait_for(ws.recv(), 0.2)
                except TimeoutError:
                    continue
                counts[node] = counts.get(node, 0) + 1

    async def main() -> dict[str, Any]:
        counts: dict[str, int] = {}
        stop = asyncio.Event()
        tasks = [asyncio.create_task(other(n, counts, stop)) for n in others]
        while sum(counts.values()) < objects * len(others):  # their first delivery
            await asyncio.sleep(0.01)
        before = dict(counts)
        headers = {"Node-Name": NODE}
        async with connect(url, additional_headers=headers, compression=None) as ws:
            await ws.send(HELLO)
            await read_all(ws, objects)  # the first connection: the objects as sent
        latencies: list[float] = []
        first_kinds: list[str] = []
        for _ in range(reconnects):
            t0 = time.perf_counter()
            async with connect(url, additional_headers=headers, compression=None) as ws:
                await ws.send(HELLO)
                kinds = await read_all(ws, objects)
                latencies.append(time.perf_counter() - t0)
                first_kinds = kinds[:3]
        await asyncio.sleep(0.3)  # anything stray sent to the others would arrive by now
        stop.set()
        await asyncio.gather(*tasks)
        return {
            "latencies": latencies,
            "first_kinds": first_kinds,
            "others_received_during_reconnects": sum(counts.values()) - sum(before.values()),
        }

    pipe.send(asyncio.run(main()))


# ---- the GM side ---------------------------------------------------------------------------


def run(objects: int, reconnects: int, other_nodes: int) -> dict[str, Any]:
    layer = MessageLayer(
        WebsocketConfig(address="127.0.0.1", port=0, auth="none", authorizeReports=False),
        metrics=Metrics(),
    )
    layer.start()
    try:
        others = [f"edge-{i}" for i in range(other_nodes)]
        for node in [NODE, *others]:
            for obj in node_objects(node, objects):
                layer.send(node, "insert", obj)
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        proc = ctx.Process(
            target=_lc_process, args=(layer.port, others, objects, reconnects, child)
        )
        proc.start()
        result: dict[str, Any] = parent.recv()
        proc.join()
    finally:
        layer.stop()
    lat = sorted(result["latencies"])
    p99 = lat[min(len(lat) - 1, round(0.99 * (len(lat) - 1)))]
    return {
        "p50_ms": round(statistics.median(lat) * 1000, 2),
        "p99_ms": round(p99 * 1000, 2),
        "max_ms": round(lat[-1] * 1000, 2),
        "replay_starts_with": result["first_kinds"],
        "others_received_during_reconnects": result["others_received_during_reconnects"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=100)
    parser.add_argument("--reconnects", type=int, default=200)
    parser.add_argument("--other-nodes", type=int, default=49)
    args = parser.parse_args()
    logger.remove()
    logger.add(lambda m: None, level="ERROR")  # keep connect/disconnect lines out
    figures = run(args.objects, args.reconnects, args.other_nodes)
    print(
        f"reconnect -> last of {args.objects} routed objects: p50 {figures['p50_ms']} ms, "
        f"p99 {figures['p99_ms']} ms, max {figures['max_ms']} ms over {args.reconnects} "
        f"reconnects; replay starts with {figures['replay_starts_with']}; "
        f"{args.other_nodes} other nodes received "
        f"{figures['others_received_during_reconnects']} frames meanwhile"
    )
    record = {
        "benchmark": "reconnect",
        "unit": "milliseconds from the LC's dial to its node's last object read",
        "objects": args.objects,
        "reconnects": args.reconnects,
        "other_nodes": args.other_nodes,
        "results": figures,
        "load_average_at_end": os.getloadavg()[0],
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
