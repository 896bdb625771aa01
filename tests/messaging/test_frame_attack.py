"""20 authenticated LCs, each with its own token, each sending three 3.9 MB frames.

With the default `maxFrameBytes` (1 MiB) such frames are skipped as they stream in,
never buffered, and counted as refused one by one (the connections go on). With
`maxFrameBytes` raised above them, each frame counts against `maxBufferedBytes` from
its header on, so the budget cuts the largest holders (`buffer_full`) before their
payload is read. An honest LC reports and receives throughout.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterator
from typing import Any

import pytest

from sedna.runtime.config import WebsocketConfig
from sedna.runtime.messaging import MessageLayer, UpstreamMessage
from sedna.runtime.metrics import Metrics

from .helpers import FakeLC, obj, sample, upgraded_socket, wait_until

ATTACKERS = 20
FRAME = 3_900_000
TOKENS = {f"lc-{i}": {f"token-of-lc-{i}"} for i in range(ATTACKERS)} | {"honest": {"tok-h"}}


class RawLC:
    """An authenticated LC that writes frame bytes as it likes."""

    def __init__(self, port: int, node: str, token: str) -> None:
        self.sock = upgraded_socket(port, node, token, timeout=10)

    def send(self, data: bytes) -> bool:
        """False once the server has cut the connection."""
        try:
            self.sock.sendall(data)
        except OSError:
            return False
        return True

    def close(self) -> None:
        self.sock.close()


def frame_header(size: int) -> bytes:
    return bytes([0x81, 0x80 | 127]) + struct.pack("!Q", size) + b"\0\0\0\0"  # zero mask


def payload(size: int) -> bytes:
    return b'{"x":"' + b"a" * (size - 8) + b'"}'


@pytest.fixture()
def layers(metrics: Metrics) -> Iterator[Any]:
    made: list[MessageLayer] = []

    def build(**fields: Any) -> MessageLayer:
        settings = WebsocketConfig(address="127.0.0.1", port=0, auth="node", **fields)
        layer = MessageLayer(
            settings, metrics=metrics, node_token_provider=lambda n: TOKENS.get(n, set())
        )
        layer.start()
        made.append(layer)
        return layer

    yield build
    for layer in made:
        layer.stop()


def _honest(layer: MessageLayer, reports: list[UpstreamMessage]) -> FakeLC:
    layer.register_upstream("Dataset", reports.append)
    layer.send("honest", "insert", obj("Dataset", "ds"))
    lc = FakeLC(layer.port, "honest", token="tok-h")
    assert lc.recv().header["resourceName"] == "ds"
    return lc


def _honest_still_works(layer: MessageLayer, lc: FakeLC, reports: list[UpstreamMessage]) -> None:
    before = len(reports)
    lc.send_status("Dataset", "default", "ds", {"numberOfSamples": 7})
    wait_until(lambda: len(reports) > before, what="the honest LC's report")
    layer.send("honest", "insert", obj("Model", "still-served"))
    assert lc.recv().header["resourceName"] == "still-served"
    assert "honest" in layer.connected_nodes()


def test_frames_above_max_frame_bytes_are_skipped_unread(layers: Any, metrics: Metrics) -> None:
    layer = layers()  # maxFrameBytes 1 MiB, maxBufferedBytes 64 MiB: the defaults
    reports: list[UpstreamMessage] = []
    honest = _honest(layer, reports)
    peers = [RawLC(layer.port, f"lc-{i}", f"token-of-lc-{i}") for i in range(ATTACKERS)]
    try:
        body = frame_header(FRAME) + payload(FRAME)
        for _ in range(3):
            for peer in peers:
                assert peer.send(body)
        wait_until(
            lambda: (
                sample(metrics, "lc_messages_rejected_total", reason="frame_too_large")
                == 3 * ATTACKERS
            ),
            timeout=60,
            what="every 3.9 MB frame refused",
        )
        # never buffered: at most the bytes of a read and a few small frames were held
        assert layer.buffered_bytes_peak < 1024 * 1024, layer.buffered_bytes_peak
        assert sample(metrics, "lc_messages_rejected_total", reason="buffer_full") == 0
        assert len(layer.connected_nodes()) == ATTACKERS + 1  # refused frames, kept links
        _honest_still_works(layer, honest, reports)
    finally:
        for peer in peers:
            peer.close()
        honest.close()


def test_the_budget_binds_at_the_frame_header(layers: Any, metrics: Metrics) -> None:
    cap = 64 * 1024 * 1024
    layer = layers(maxFrameBytes=4 * 1024 * 1024, maxBufferedBytes=cap)
    reports: list[UpstreamMessage] = []
    honest = _honest(layer, reports)
    peers = [RawLC(layer.port, f"lc-{i}", f"token-of-lc-{i}") for i in range(ATTACKERS)]
    try:
        for peer in peers:  # every header and a first slice: 78 MB announced, 2 MB sent
            peer.send(frame_header(FRAME) + b'{"x":"' + b"a" * 100_000)
        wait_until(
            lambda: sample(metrics, "lc_messages_rejected_total", reason="buffer_full") >= 3,
            timeout=30,
            what="the budget to cut the largest holders before their payloads came",
        )
        assert layer.buffered_bytes_peak <= cap
        _honest_still_works(layer, honest, reports)
        rest = b"a" * (FRAME - 100_008) + b'"}'
        for peer in peers:  # the survivors finish their frame, then two more
            with contextlib.suppress(OSError):
                peer.send(rest + (frame_header(FRAME) + payload(FRAME)) * 2)
        # handled; each link keeps at most its last frame (the library's parser holds it)
        wait_until(
            lambda: layer.buffered_bytes <= len(layer.connected_nodes()) * FRAME,
            timeout=60,
            what="everything handled",
        )
        assert layer.buffered_bytes_peak <= cap
        _honest_still_works(layer, honest, reports)
    finally:
        for peer in peers:
            peer.close()
        honest.close()
