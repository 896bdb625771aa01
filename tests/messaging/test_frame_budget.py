"""One cap on what all LCs together make the GM buffer (websocket.maxBufferedBytes).

Hostile peers open a websocket, announce a large text frame (within maxFrameBytes) and
send most of it, then nothing: each connection alone stays under the limits, so only
the global budget stands between them and the GM's memory. A frame counts as held from
its header on, for its announced size, so the budget refuses the peer that holds the
most before its payload is read, and a well-behaved LC keeps reporting and receiving
throughout.
"""

from __future__ import annotations

import contextlib
import os
import struct

import pytest

from sedna.runtime.config import WebsocketConfig
from sedna.runtime.messaging import UpstreamMessage
from sedna.runtime.metrics import Metrics

from .conftest import LayerFactory
from .helpers import FakeLC, obj, sample, upgraded_socket, wait_until

FRAME_LIMIT = 1024 * 1024  # websocket.maxFrameBytes
CAP = 2 * 1024 * 1024  # websocket.maxBufferedBytes
ANNOUNCED = 900 * 1024  # within maxFrameBytes: the library buffers all of it
SENT = 600 * 1024


class HalfFrame:
    """A websocket client that announces a text frame and sends only part of it."""

    def __init__(self, port: int, node: str) -> None:
        self.sock = upgraded_socket(port, node, timeout=5)

    def send_part(self, announced: int, sent: int) -> None:
        header = bytes([0x81, 0x80 | 127]) + struct.pack("!Q", announced) + os.urandom(4)
        # refused (reset) while sending: what the budget does to the largest holder
        with contextlib.suppress(OSError):
            self.sock.sendall(header + b"a" * sent)

    def close(self) -> None:
        self.sock.close()


def test_many_half_sent_frames_cannot_push_the_buffer_past_the_cap(
    make_layer: LayerFactory, metrics: Metrics, logs: list[str]
) -> None:
    layer = make_layer(maxFrameBytes=FRAME_LIMIT, maxBufferedBytes=CAP)
    reports: list[UpstreamMessage] = []
    layer.register_upstream("Dataset", reports.append)
    good = FakeLC(layer.port, "good")
    wait_until(lambda: layer.connected_nodes() == ["good"], what="the good LC connected")

    hostile = [HalfFrame(layer.port, f"hostile-{i}") for i in range(8)]
    try:
        for i, peer in enumerate(hostile):
            peer.send_part(ANNOUNCED, SENT)
            good.send_status("Dataset", "default", f"ds-{i}", {"numberOfSamples": i})
        # 8 x 900 KiB were announced; at most the cap is held, and the holders paid for it
        wait_until(
            lambda: sample(metrics, "lc_messages_rejected_total", reason="buffer_full") >= 4,
            what="the largest holders refused",
        )
        wait_until(lambda: len(reports) == len(hostile), what="every report of the good LC")
        assert [r.content["numberOfSamples"] for r in reports] == list(range(len(hostile)))
        assert layer.buffered_bytes_peak <= CAP
        assert layer.buffered_bytes_peak >= ANNOUNCED  # counted from the headers on
        assert sample(metrics, "lc_buffered_bytes") <= CAP
        assert "good" in layer.connected_nodes()
        refusals = [line for line in logs if "(buffer_full)" in line]
        assert refusals and all("node hostile-" in line for line in refusals), refusals
        assert len(refusals) <= 5 * len(hostile)  # rate-limited per node

        layer.send("good", "insert", obj("Model", "still-served"))
        assert good.recv().header["resourceName"] == "still-served"
    finally:
        for peer in hostile:
            peer.close()
    # what is left is the good LC's last report, which the library keeps until the next
    wait_until(lambda: layer.buffered_bytes < 4096, what="the hostile peers' bytes released")
    assert sample(metrics, "lc_buffered_bytes") < 4096
    good.close()


def test_a_half_sent_frame_is_counted_until_its_peer_goes(make_layer: LayerFactory) -> None:
    layer = make_layer(maxFrameBytes=FRAME_LIMIT, maxBufferedBytes=CAP)
    peer = HalfFrame(layer.port, "slow")
    peer.send_part(ANNOUNCED, SENT)
    # counted for its announced size from its header on, not as its bytes come
    wait_until(lambda: layer.buffered_bytes >= ANNOUNCED, what="the half frame counted")
    assert layer.buffered_bytes <= ANNOUNCED + 64  # the frame's header at most besides
    assert layer.connected_nodes() == ["slow"]  # under the cap: nobody is refused
    peer.close()
    wait_until(lambda: layer.buffered_bytes == 0, what="its bytes released")


def test_handled_frames_give_their_bytes_back(make_layer: LayerFactory, metrics: Metrics) -> None:
    """Thousands of frames through one connection leave nothing counted (no drift)."""
    layer = make_layer(maxFrameBytes=FRAME_LIMIT, maxBufferedBytes=CAP)
    reports: list[UpstreamMessage] = []
    layer.register_upstream("Dataset", reports.append)
    lc = FakeLC(layer.port, "busy")
    blob = "y" * 20_000
    for i in range(2000):
        lc.send_status("Dataset", "default", f"ds-{i % 50}", {"n": i, "blob": blob})
    wait_until(lambda: len(reports) == 2000, timeout=30, what="every report handled")
    # the last report only (27 kB in base64): the library keeps it until the next one
    wait_until(lambda: layer.buffered_bytes <= 32_000, what="only the last report counted")
    assert sample(metrics, "lc_messages_rejected_total", reason="buffer_full") == 0
    assert layer.buffered_bytes_peak > 0
    lc.close()


def test_the_cap_must_hold_two_frames() -> None:
    with pytest.raises(ValueError, match="maxBufferedBytes"):
        WebsocketConfig(maxFrameBytes=FRAME_LIMIT, maxBufferedBytes=FRAME_LIMIT)
