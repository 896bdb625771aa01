"""Slow and hostile LCs: a peer that stops reading, frames nested deep, fuzzed frames.

Regression tests for: "an LC that stops reading is never disconnected", "deeply nested
frames log unthrottled tracebacks that are not counted as rejections".
"""

from __future__ import annotations

import base64
import json
import socket
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from websockets.exceptions import InvalidStatus

from sedna.runtime.messaging.wire import FrameError, decode_frame, decode_payload
from sedna.runtime.metrics import Metrics

from .conftest import LayerFactory
from .helpers import FakeLC, frame, obj, sample, wait_until
from .test_roundtrip import _silent_lc


def test_an_lc_that_stops_reading_is_disconnected_and_its_queue_kept(
    make_layer: LayerFactory,
) -> None:
    layer = make_layer(writeTimeoutSeconds=0.3, maxFrameBytes=4 * 1024 * 1024)
    dead = _silent_lc(layer.port, "n")
    try:
        wait_until(lambda: layer.connected_nodes() == ["n"], what="connected")
        for i in range(60):
            layer.send("n", "insert", obj("Model", f"m{i}", blob="x" * 400_000))
        wait_until(lambda: layer.connected_nodes() == [], timeout=20, what="disconnected")
        assert layer.queue_depth("n") > 0  # what it did not take waits for its next connection
    finally:
        dead.close()


def test_a_deeply_nested_frame_is_a_counted_rejection(
    make_layer: LayerFactory, metrics: Metrics, logs: list[str]
) -> None:
    layer = make_layer()
    got: list[object] = []
    layer.register_upstream("dataset", got.append)
    lc = FakeLC(layer.port, "n")
    deep: object = 1
    for _ in range(900):
        deep = [deep]
    lc.send_status("dataset", "ns", "d", {"x": deep})
    lc.send_raw('{"header": ' + "[" * 100_000 + "]" * 100_000 + "}")
    wait_until(
        lambda: sample(metrics, "lc_messages_rejected_total", reason="too_deep") == 2,
        what="both frames rejected",
    )
    assert not any("Traceback" in line for line in logs)
    lc.send_status("dataset", "ns", "d", {"numberOfSamples": 1})
    wait_until(lambda: len(got) == 1, what="the connection goes on")


def _lists_of(kids: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(kids, max_size=3)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(max_size=200),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=20),
            lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids),
            max_leaves=30,
        ).map(json.dumps),
        st.builds(
            lambda kind, ns, name, op, payload: frame(kind, ns, name, payload, op),
            st.text(max_size=10),
            st.text(max_size=10),
            st.text(max_size=10),
            st.sampled_from(["status", "insert", ""]),
            st.recursive(st.integers() | st.text(max_size=5), _lists_of, max_leaves=10),
        ),
    )
)
def test_fuzzed_frames_only_ever_raise_frame_errors(text: str) -> None:
    try:
        decoded = decode_frame(text)
        if decoded is not None:
            decode_payload(decoded[1], decoded[0])
    except FrameError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_fuzzed_payloads_only_ever_raise_frame_errors(raw: bytes) -> None:
    text = json.dumps(
        {
            "header": {"namespace": "n", "resourceKind": "k", "resourceName": "x",
                       "operation": "status"},
            "content": base64.b64encode(raw).decode(),
        }
    )  # fmt: skip
    try:
        decoded = decode_frame(text)
        assert decoded is not None
        decode_payload(decoded[1], decoded[0])
    except FrameError:
        pass


def test_a_peer_that_does_not_close_cannot_hold_the_shutdown(make_layer: LayerFactory) -> None:
    """Regression: an LC that stopped reading held SIGTERM for 10 s."""
    layer = make_layer(shutdownGraceSeconds=1.0)
    dead = _silent_lc(layer.port, "n")
    try:
        wait_until(lambda: layer.connected_nodes() == ["n"], what="connected")
        stopping = threading.Thread(target=layer.stop)
        stopping.start()
        stopping.join(5)  # a deadline well above the grace, far below the old 10 s
        assert not stopping.is_alive()
        assert layer._thread is not None and not layer._thread.is_alive()
    finally:
        dead.close()


def test_connections_beyond_the_cap_are_refused(make_layer: LayerFactory, metrics: Metrics) -> None:
    layer = make_layer(maxConnections=2)
    FakeLC(layer.port, "a")
    FakeLC(layer.port, "b")
    wait_until(lambda: len(layer.connected_nodes()) == 2, what="two connections")
    with pytest.raises(InvalidStatus) as exc:
        FakeLC(layer.port, "c")
    assert exc.value.response.status_code == 503
    assert sample(metrics, "lc_messages_rejected_total", reason="too_many_connections") == 1


def test_a_handshake_that_never_ends_is_cut(make_layer: LayerFactory) -> None:
    layer = make_layer(handshakeTimeoutSeconds=0.5)
    with socket.create_connection(("127.0.0.1", layer.port), timeout=10) as raw:
        raw.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # never the blank line
        raw.settimeout(10)
        try:
            data = raw.recv(100)
        except ConnectionResetError:
            data = b""
        assert data == b"" or data.startswith(b"HTTP/1.1 4")  # closed, well before 10 s
