"""Many nodes at once, each with its own traffic; lifecycle; failed writes."""

from __future__ import annotations

import asyncio
import socket

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, ConnectionClosedError

from sedna.runtime.config import WebsocketConfig
from sedna.runtime.messaging import MessageLayer, UpstreamMessage
from sedna.runtime.messaging.server import _Connection, _LoopWaker
from sedna.runtime.metrics import Metrics

from .conftest import LayerFactory
from .helpers import GO_HELLO, FakeLC, frame, obj, parse, sample, wait_until

NODES = 200
PER_NODE = 3


def test_200_nodes_each_get_their_own_messages_only(
    make_layer: LayerFactory, metrics: Metrics
) -> None:
    layer = make_layer()
    reports: list[UpstreamMessage] = []
    layer.register_upstream("model", reports.append)
    names = [f"node-{i:03d}" for i in range(NODES)]

    async def one(node: str, gate: asyncio.Semaphore, all_in: asyncio.Event) -> list[str]:
        async with gate:
            ws = await connect(
                f"ws://127.0.0.1:{layer.port}/",
                additional_headers={"Node-Name": node},
                open_timeout=10,
                compression=None,
            )
        async with ws:
            await ws.send(GO_HELLO)
            await all_in.wait()
            got = [parse(await asyncio.wait_for(ws.recv(), 10)) for _ in range(PER_NODE)]
            await ws.send(frame("model", "default", f"{node}-report", {"n": node}))
            for r in got:
                assert r.payload["spec"]["owner"] == node
            return [r.header["resourceName"] for r in got]

    async def main() -> list[list[str]]:
        gate = asyncio.Semaphore(50)  # stay under the listen backlog
        all_in = asyncio.Event()
        tasks = [asyncio.create_task(one(n, gate, all_in)) for n in names]
        while len(layer.connected_nodes()) < NODES:
            await asyncio.sleep(0.01)
        for n in names:
            for k in range(PER_NODE):
                layer.send(n, "insert", obj("Model", f"{n}-m{k}", owner=n))
        all_in.set()
        return await asyncio.wait_for(asyncio.gather(*tasks), 20)

    results = asyncio.run(main())
    for node, got in zip(names, results, strict=True):
        assert got == [f"{node}-m{k}" for k in range(PER_NODE)]
    wait_until(lambda: len(reports) == NODES, what="every report handled")
    assert sorted(r.node_name for r in reports) == names
    assert all(r.name == f"{r.node_name}-report" for r in reports)
    # Each send is counted once the socket write returns, each report once it is queued
    # for its handler (which may have finished first): both on the socket thread.
    wait_until(
        lambda: sample(metrics, "lc_messages_sent_total", kind="model") == NODES * PER_NODE,
        what="every send counted",
    )
    assert sample(metrics, "lc_messages_sent_total", kind="model") == NODES * PER_NODE
    wait_until(
        lambda: sample(metrics, "lc_messages_received_total", kind="model") == NODES,
        what="every report counted",
    )
    assert sample(metrics, "lc_messages_received_total", kind="model") == NODES


def test_failed_write_goes_back_to_the_queue_for_the_next_connection(
    make_layer: LayerFactory, logs: list[str]
) -> None:
    layer = make_layer()
    layer.send("n", "insert", obj("Model", "m"))

    class BrokenSocket:
        async def send(self, data: str) -> None:
            raise ConnectionClosedError(None, None)

    async def write_once() -> None:
        waker = _LoopWaker(asyncio.get_running_loop())
        conn = _Connection("n", BrokenSocket(), waker, None)  # type: ignore[arg-type]
        await layer._write_loop(conn, layer._queue_for("n"))

    asyncio.run(write_once())
    assert layer.queue_depth("n") == 1
    assert any("kept for the next connection" in line for line in logs)
    lc = FakeLC(layer.port, "n")
    assert lc.recv().header["resourceName"] == "m"


def test_stop_closes_connections_and_is_idempotent(make_layer: LayerFactory) -> None:
    layer = make_layer()
    lc = FakeLC(layer.port, "n")
    wait_until(lambda: layer.connected_nodes() == ["n"], what="connected")
    layer.stop()
    with pytest.raises(ConnectionClosed):
        lc.ws.recv(timeout=5)
    assert lc.ws.close_code == 1001
    layer.stop()
    with pytest.raises(RuntimeError):
        layer.start()
    # send after stop is harmless (nothing listens any more).
    layer.send("n", "insert", obj("Model", "m"))


def test_port_in_use_fails_start(metrics: Metrics) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        layer = MessageLayer(
            WebsocketConfig(address="127.0.0.1", port=port, auth="none"), metrics=metrics
        )
        with pytest.raises(RuntimeError, match="cannot listen"):
            layer.start()
        layer.stop()
