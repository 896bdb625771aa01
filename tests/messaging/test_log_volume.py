"""What hostile peers can write to the GM's log is bounded, and a trickled frame is cut.

Regression tests for: refused handshakes with unique 4 KB `Node-Name`s logged 4,150 B
each (the rate limit was keyed by the name the peer chose); reports with 600 KB names
were never length-checked; a frame trickled in one byte at a time was never cut.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Iterator

import pytest
from loguru import logger

from sedna.runtime.log_safety import PEER_TEXT_LIMIT, clip
from sedna.runtime.logging import TEXT_FORMAT
from sedna.runtime.messaging.wire import MAX_NAME_LENGTH, FrameError, Reason, decode_frame
from sedna.runtime.metrics import Metrics

from .conftest import LayerFactory
from .helpers import FakeLC, frame, sample, wait_until

# SECURITY.md: at most this much log per minute from unauthenticated peers
UNAUTHENTICATED_LOG_BOUND = 16 * 1024


@pytest.fixture()
def logged() -> Iterator[list[int]]:
    """Bytes of every line at INFO and above, in `sedna-gm`'s text format."""
    sizes: list[int] = []
    sink = logger.add(lambda m: sizes.append(len(m.encode())), level="INFO", format=TEXT_FORMAT)
    yield sizes
    logger.remove(sink)


def _upgrade(node: bytes, token: bytes | None = None) -> bytes:
    auth = b"Authorization: Bearer " + token + b"\r\n" if token else b""
    return (
        b"GET / HTTP/1.1\r\nHost: gm\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        b"Node-Name: " + node + b"\r\n" + auth + b"\r\n"
    )


def _status_of(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(256)
            if not chunk:
                break
            data += chunk
        return data.split(b"\r\n", 1)[0]


def test_2000_refused_handshakes_with_unique_4kb_names_log_a_bounded_amount(
    make_layer: LayerFactory, metrics: Metrics, logged: list[int]
) -> None:
    layer = make_layer(auth="token", token_provider=lambda: ["the-token"])
    before = sum(logged)
    for i in range(2000):
        name = b"%05d" % i + b"n" * 4096
        token = b"wrong" if i % 2 else None
        assert _status_of(layer.port, _upgrade(name, token)) == b"HTTP/1.1 401 Unauthorized"
    wait_until(
        lambda: sample(metrics, "lc_messages_rejected_total", reason="unauthorized") == 2000,
        what="every refusal counted",
    )
    written = sum(logged) - before
    print(f"{written} bytes logged for 2000 refused handshakes")
    assert written < UNAUTHENTICATED_LOG_BOUND, f"{written} bytes logged for 2000 refusals"


def test_report_names_over_253_characters_are_rejected_in_one_short_line(
    make_layer: LayerFactory, metrics: Metrics, logged: list[int]
) -> None:
    layer = make_layer(maxFrameBytes=2 * 1024 * 1024)
    got: list[object] = []
    layer.register_upstream("reidjob", got.append)
    lc = FakeLC(layer.port, "edge")
    before = sum(logged)
    for _ in range(40):
        lc.send_raw(frame("ReidJob", "default", "r" * 600_000, {"phase": "Running"}))
    wait_until(
        lambda: sample(metrics, "lc_messages_rejected_total", reason="invalid_name") == 40,
        timeout=20,
        what="every report rejected",
    )
    assert sum(logged) - before < 8 * 1024
    assert got == []
    lc.send_raw(frame("ReidJob", "default", "r" * MAX_NAME_LENGTH, {"phase": "Running"}))
    wait_until(lambda: len(got) == 1, what="a 253-character name is accepted")


@pytest.mark.parametrize(
    ("field", "length"),
    [("resourceName", 254), ("namespace", 64), ("resourceKind", 10_000), ("operation", 64)],
)
def test_over_long_header_fields_are_malformed(field: str, length: int) -> None:
    header = {"namespace": "ns", "resourceKind": "dataset", "resourceName": "d", "operation": "s"}
    header[field] = "x" * length

    with pytest.raises(FrameError) as err:
        decode_frame(json.dumps({"header": header, "content": ""}))
    assert err.value.reason is Reason.INVALID_NAME
    assert err.value.header is None  # so the rejection line cannot carry the long value
    assert len(str(err.value)) < 200


def test_a_frame_trickled_in_is_cut_and_counted(make_layer: LayerFactory, metrics: Metrics) -> None:
    layer = make_layer(readTimeoutSeconds=0.3)
    with socket.create_connection(("127.0.0.1", layer.port), timeout=10) as s:
        s.sendall(_upgrade(b"slow"))
        assert s.recv(64).startswith(b"HTTP/1.1 101")
        # a masked text frame that announces 100,000 bytes, then one byte at a time
        s.sendall(bytes([0x81, 0x80 | 127]) + struct.pack("!Q", 100_000) + b"\0\0\0\0")
        s.settimeout(0.05)
        deadline = time.monotonic() + 20
        closed = False
        while not closed and time.monotonic() < deadline:
            try:
                s.sendall(b"a")
                closed = s.recv(4096) == b"" or closed
            except TimeoutError:
                continue
            except OSError:
                closed = True
        assert closed, "the trickled frame was never cut"
    wait_until(
        lambda: sample(metrics, "lc_messages_rejected_total", reason="read_timeout") == 1,
        what="the cut counted",
    )


def test_clip_keeps_peer_strings_short_and_on_one_line() -> None:
    assert clip("edge-1") == "edge-1"
    long = clip("n" * 4096)
    assert long.startswith("n" * PEER_TEXT_LIMIT) and long.endswith(f"(+{4096 - 64} chars)")
    assert len(long) < PEER_TEXT_LIMIT + 20
    assert clip("a\nFAKE LINE\r\x1b[31m") == "a\\nFAKE LINE\\r\\x1b[31m"
    assert clip(12345, 3) == "123...(+2 chars)"


def test_a_node_name_longer_than_a_kubernetes_name_is_refused(
    make_layer: LayerFactory, metrics: Metrics, logged: list[int]
) -> None:
    layer = make_layer(auth="token", token_provider=lambda: ["the-token"])
    before = sum(logged)
    for i in range(200):
        name = b"%03d" % i + b"n" * 4000
        status = _status_of(layer.port, _upgrade(name, b"the-token"))
        assert status == b"HTTP/1.1 400 Bad Request"
    wait_until(
        lambda: sample(metrics, "lc_messages_rejected_total", reason="invalid_name") == 200,
        what="every refusal counted",
    )
    assert sum(logged) - before < 4 * 1024
    assert layer.connected_nodes() == []
    ok = _status_of(layer.port, _upgrade(b"n" * MAX_NAME_LENGTH, b"the-token"))
    assert ok == b"HTTP/1.1 101 Switching Protocols"
