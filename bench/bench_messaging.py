"""LC message layer throughput: downstream sends to N nodes, upstream reports to handlers.

The simulated LCs run in a child process (spawned, with their own interpreter and
GIL), so the figures are the GM side's, not those of a Python client sharing its GIL.

* `downstream nodes=N`: N connected LCs; the main thread calls `send` for `--messages`
  distinct objects (a ~1.9 KB IncrementalLearningJob each), spread round-robin over
  the nodes; measured until the last frame has been read by its LC. Also the cost of
  one `send` call in the controller thread (encode + queue), which is what a
  controller waits for.
* `backlog nodes=N`: the same messages queued while the nodes are away, then the
  nodes connect; measured from the first dial to the last frame read (how fast a
  reconnecting fleet catches up), and the cost of `send` with no socket traffic
  competing for the GIL.
* `upstream nodes=N`: N LCs write `--messages` status frames in total as fast as they
  can; measured until the registered handler (a counter) has seen the last one.

`maxQueuePerNode` is raised for the run so that no message is dropped while the
producer outruns the sockets (the default bound is part of the design, not a limit
of the transport).

Run: `python bench/bench_messaging.py [--messages N] [--nodes 1,50,200]`. Prints a table
and writes `bench/results/messaging.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import multiprocessing as mp
import os
import platform
import threading
import time
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from loguru import logger

from sedna.runtime.config import WebsocketConfig
from sedna.runtime.messaging import MessageLayer, UpstreamMessage
from sedna.runtime.metrics import Metrics

RESULTS = Path(__file__).resolve().parent / "results" / "messaging.json"
IMAGE = "kubeedge/sedna-example-incremental-learning-helmet-detection:v0.4.0"
HELLO = '{"namespace":"","resourceKind":"","resourceName":"","operation":""}'


def job(name: str, node: str) -> dict[str, Any]:
    """An IncrementalLearningJob of realistic size (~1.9 KB of JSON)."""
    worker = {
        "template": {
            "spec": {
                "nodeName": node,
                "containers": [
                    {
                        "image": IMAGE,
                        "name": "train-worker",
                        "imagePullPolicy": "IfNotPresent",
                        "args": ["train.py"],
                        "env": [
                            {"name": "batch_size", "value": "32"},
                            {"name": "epochs", "value": "1"},
                            {"name": "input_shape", "value": "352,640"},
                        ],
                        "resources": {"limits": {"memory": "2Gi"}},
                    }
                ],
            }
        }
    }
    return {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "IncrementalLearningJob",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "resourceVersion": "12345",
        },
        "spec": {
            "initialModel": {"name": "initial-model"},
            "dataset": {"name": "incremental-dataset", "trainProb": 0.8},
            "trainSpec": {
                **worker,
                "trigger": {
                    "checkPeriodSeconds": 60,
                    "timer": {"start": "02:00", "end": "20:00"},
                    "condition": {"operator": ">", "threshold": 500, "metric": "num_of_samples"},
                },
            },
            "evalSpec": worker,
            "deploySpec": {
                "model": {"name": "deploy-model"},
                "trigger": {
                    "condition": {"operator": ">", "threshold": 0.1, "metric": "precision"}
                },
                "hardExampleMining": {"name": "IBT"},
                **worker,
            },
            "outputDir": "/output",
        },
    }


def status_frame(node: str, i: int) -> str:
    payload = {
        "phase": "train",
        "status": "completed",
        "input": {"dataURL": "/data/train.txt", "outputDir": "/output/train/1"},
        "output": {"models": [{"format": "pb", "url": f"/output/train/1/model-{i}.pb"}]},
    }
    header = {
        "namespace": "default",
        "resourceKind": "incrementallearningjob",
        "resourceName": f"{node}-job",
        "operation": "status",
    }
    content = base64.b64encode(json.dumps(payload).encode()).decode()
    return json.dumps({"header": header, "content": content}) + "\n"


# ---- the LC side (child process) ---------------------------------------------------------


def _lc_process(port: int, nodes: list[str], mode: str, per_node: int, pipe: Connection) -> None:
    asyncio.run(_lcs(port, nodes, mode, per_node, pipe))


async def _lcs(port: int, nodes: list[str], mode: str, per_node: int, pipe: Connection) -> None:
    from websockets.asyncio.client import ClientConnection, connect

    gate = asyncio.Semaphore(50)

    async def dial(node: str) -> ClientConnection:
        async with gate:
            ws = await connect(
                f"ws://127.0.0.1:{port}/",
                additional_headers={"Node-Name": node},
                compression=None,
                max_size=None,
            )
        await ws.send(HELLO)
        return ws

    loop = asyncio.get_running_loop()
    if mode == "backlog":
        # Everything waits in the GM already: time from the first dial to the last frame.
        start = time.monotonic()
        conns = await asyncio.gather(*(dial(n) for n in nodes))
    else:
        conns = await asyncio.gather(*(dial(n) for n in nodes))
        pipe.send("ready")
    if mode in ("down", "backlog"):

        async def drain(ws: ClientConnection) -> None:
            for _ in range(per_node):
                await ws.recv()

        await asyncio.gather(*(drain(ws) for ws in conns))
        end = time.monotonic()
        pipe.send((start, end) if mode == "backlog" else end)
    else:
        frames = {n: [status_frame(n, i) for i in range(per_node)] for n in nodes}
        await loop.run_in_executor(None, pipe.recv)  # "go"
        start = time.monotonic()

        async def blast(node: str, ws: ClientConnection) -> None:
            for f in frames[node]:
                await ws.send(f)

        await asyncio.gather(*(blast(n, ws) for n, ws in zip(nodes, conns, strict=True)))
        pipe.send(start)
    await loop.run_in_executor(None, pipe.recv)  # "close"
    await asyncio.gather(*(ws.close() for ws in conns))


# ---- the GM side ---------------------------------------------------------------------------


def _layer(messages: int) -> MessageLayer:
    settings = WebsocketConfig(
        address="127.0.0.1", port=0, auth="none", maxQueuePerNode=max(1000, messages)
    )
    layer = MessageLayer(settings, metrics=Metrics(), upstream_backlog=max(10_000, messages))
    layer.start()
    return layer


def _start_lcs(
    port: int, nodes: list[str], mode: str, per_node: int
) -> tuple[mp.process.BaseProcess, Connection]:
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_lc_process, args=(port, nodes, mode, per_node, child))
    proc.start()
    if mode == "backlog":
        return proc, parent
    if not parent.poll(60):
        raise RuntimeError("LC process did not connect")
    assert parent.recv() == "ready"
    return proc, parent


def bench_downstream(n_nodes: int, messages: int) -> dict[str, float]:
    per_node = messages // n_nodes
    total = per_node * n_nodes
    layer = _layer(total)
    nodes = [f"node-{i:03d}" for i in range(n_nodes)]
    objs = [job(f"job-{i}", nodes[i % n_nodes]) for i in range(total)]
    proc, pipe = _start_lcs(layer.port, nodes, "down", per_node)
    try:
        while len(layer.connected_nodes()) < n_nodes:
            time.sleep(0.01)
        start = time.monotonic()
        for i, obj in enumerate(objs):
            layer.send(nodes[i % n_nodes], "insert", obj)
        sent = time.monotonic()
        if not pipe.poll(120):
            raise RuntimeError("LCs did not receive everything")
        end = float(pipe.recv())
        pipe.send("close")
    finally:
        proc.join(30)
        layer.stop()
    return {
        "messages_per_second": round(total / (end - start)),
        "send_call_microseconds": round((sent - start) / total * 1e6, 1),
    }


def bench_backlog(n_nodes: int, messages: int) -> dict[str, float]:
    per_node = messages // n_nodes
    total = per_node * n_nodes
    layer = _layer(total)
    nodes = [f"node-{i:03d}" for i in range(n_nodes)]
    objs = [job(f"job-{i}", nodes[i % n_nodes]) for i in range(total)]
    start = time.perf_counter()
    for i, obj in enumerate(objs):
        layer.send(nodes[i % n_nodes], "insert", obj)
    send_us = (time.perf_counter() - start) / total * 1e6
    proc, pipe = _start_lcs(layer.port, nodes, "backlog", per_node)
    try:
        if not pipe.poll(120):
            raise RuntimeError("LCs did not receive everything")
        first_dial, end = pipe.recv()
        pipe.send("close")
    finally:
        proc.join(30)
        layer.stop()
    return {
        "messages_per_second": round(total / (end - first_dial)),
        "send_call_microseconds": round(send_us, 1),
    }


def bench_upstream(n_nodes: int, messages: int) -> dict[str, float]:
    per_node = messages // n_nodes
    total = per_node * n_nodes
    layer = _layer(total)
    done = threading.Event()
    count = [0]

    def handler(msg: UpstreamMessage) -> None:
        count[0] += 1
        if count[0] == total:
            done.set()

    layer.register_upstream("IncrementalLearningJob", handler)
    nodes = [f"node-{i:03d}" for i in range(n_nodes)]
    proc, pipe = _start_lcs(layer.port, nodes, "up", per_node)
    try:
        pipe.send("go")
        if not done.wait(120):
            raise RuntimeError(f"handled only {count[0]} of {total}")
        end = time.monotonic()
        start = float(pipe.recv())
        pipe.send("close")
    finally:
        proc.join(30)
        layer.stop()
    return {"messages_per_second": round(total / (end - start))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--nodes", default="1,50,200")
    args = parser.parse_args()
    logger.remove()
    logger.add(lambda m: None, level="ERROR")  # keep connect/disconnect lines out of the figures
    results: dict[str, Any] = {}
    print(
        "nodes   live downstream msg/s (send() us)   backlog flush msg/s (send() us alone)"
        "   upstream msg/s"
    )
    for n in (int(x) for x in args.nodes.split(",")):
        down = bench_downstream(n, args.messages)
        results[f"downstream_live_nodes{n}_messages_per_second"] = down["messages_per_second"]
        results[f"downstream_live_nodes{n}_send_call_us"] = down["send_call_microseconds"]
        backlog = bench_backlog(n, args.messages)
        results[f"downstream_backlog_nodes{n}_messages_per_second"] = backlog["messages_per_second"]
        results[f"send_call_uncontended_nodes{n}_us"] = backlog["send_call_microseconds"]
        up = bench_upstream(n, args.messages)
        results[f"upstream_nodes{n}_messages_per_second"] = up["messages_per_second"]
        print(
            f"{n:5d}   {down['messages_per_second']:>19} ({down['send_call_microseconds']:>6})"
            f"   {backlog['messages_per_second']:>19} ({backlog['send_call_microseconds']:>6})"
            f"          {up['messages_per_second']:>14}",
            flush=True,
        )
    record = {
        "benchmark": "messaging",
        "unit": "messages_per_second",
        "messages": args.messages,
        "payload": "IncrementalLearningJob ~1.9 KB downstream; IL status report upstream",
        "results": results,
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
