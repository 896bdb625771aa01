"""Each kind of bad frame is refused, logged with node and reason, counted, and the
same connection then delivers a good frame."""

from __future__ import annotations

import base64
import json

import pytest

from sedna.runtime.messaging import UpstreamMessage
from sedna.runtime.metrics import Metrics

from .conftest import LayerFactory
from .helpers import FakeLC, frame, sample, wait_until

LIMIT = 4096


def _wrap(header: object, content: object) -> str:
    return json.dumps({"header": header, "content": content})


GOOD_HEADER = {
    "namespace": "default",
    "resourceKind": "model",
    "resourceName": "m",
    "operation": "status",
}

BAD_FRAMES: dict[str, str | bytes] = {
    "invalid_json": '{"header": {"namespace": "default", ',
    "invalid_base64": _wrap(GOOD_HEADER, "not*base64!"),
    "payload_not_json": _wrap(GOOD_HEADER, base64.b64encode(b"not json {").decode()),
    "missing_header": json.dumps({"content": base64.b64encode(b"{}").decode()}),
    "missing_field": _wrap(
        {k: v for k, v in GOOD_HEADER.items() if k != "resourceName"},
        base64.b64encode(b"{}").decode(),
    ),
    "unknown_kind": frame("nosuchkind", "default", "x", {"a": 1}),
    "binary_frame": frame("model", "default", "m", {"a": 1}).encode(),
    "frame_too_large": frame("model", "default", "m", {"blob": "x" * LIMIT}),
}


@pytest.mark.parametrize("reason", sorted(BAD_FRAMES))
def test_bad_frame_is_rejected_and_connection_goes_on(
    reason: str, make_layer: LayerFactory, metrics: Metrics, logs: list[str]
) -> None:
    layer = make_layer(maxFrameBytes=LIMIT)
    got: list[UpstreamMessage] = []
    layer.register_upstream("Model", got.append)
    lc = FakeLC(layer.port, "edge-bad")
    bystander = FakeLC(layer.port, "edge-ok")

    lc.send_raw(BAD_FRAMES[reason])
    lc.send_status("model", "default", "after-bad", {"ok": True})
    bystander.send_status("model", "default", "bystander", {"ok": True})

    wait_until(lambda: len(got) == 2, what="good frames handled")
    assert {m.name for m in got} == {"after-bad", "bystander"}
    assert sample(metrics, "lc_messages_rejected_total", reason=reason) == 1
    lines = [line for line in logs if "rejected" in line and reason in line]
    assert len(lines) == 1
    assert "edge-bad" in lines[0]
    assert layer.connected_nodes() == ["edge-bad", "edge-ok"]
    # The connection is still usable downstream too.
    layer.send("edge-bad", "insert", {"kind": "Model", "metadata": {"name": "x"}})
    assert lc.recv().header["resourceName"] == "x"


def test_rejection_log_names_kind_and_object_but_no_payload(
    make_layer: LayerFactory, logs: list[str]
) -> None:
    layer = make_layer()
    lc = FakeLC(layer.port, "n")
    secret = base64.b64encode(b'{"password": "hunter2"').decode()  # truncated JSON
    lc.send_raw(_wrap({**GOOD_HEADER, "resourceKind": "Model"}, secret))
    wait_until(lambda: any("rejected" in line for line in logs), what="rejection")
    line = next(line for line in logs if "rejected" in line)
    assert "kind=model namespace=default name=m" in line
    assert "hunter2" not in "".join(logs)


def test_non_status_operation_is_ignored_with_a_warning(
    make_layer: LayerFactory, metrics: Metrics, logs: list[str]
) -> None:
    layer = make_layer()
    got: list[UpstreamMessage] = []
    layer.register_upstream("model", got.append)
    lc = FakeLC(layer.port, "n")
    lc.send_raw(frame("model", "default", "m", {}, operation="insert"))
    lc.send_status("model", "default", "m2", {})
    wait_until(lambda: len(got) == 1, what="status handled")
    assert got[0].name == "m2"
    assert sample(metrics, "lc_messages_rejected_total", reason="unsupported_operation") == 1
    assert any(line.startswith("WARNING") and "'insert'" in line for line in logs)


def test_frame_far_above_the_limit_closes_only_that_connection(
    make_layer: LayerFactory,
) -> None:
    """Above 4x maxFrameBytes the library must stop buffering: close code 1009."""
    layer = make_layer(maxFrameBytes=LIMIT)
    got: list[UpstreamMessage] = []
    layer.register_upstream("model", got.append)
    lc = FakeLC(layer.port, "big")
    other = FakeLC(layer.port, "other")
    lc.send_raw(frame("model", "default", "m", {"blob": "x" * (5 * LIMIT)}))
    wait_until(lambda: lc.ws.close_code is not None, what="connection closed")
    assert lc.ws.close_code == 1009
    other.send_status("model", "default", "still", {})
    wait_until(lambda: len(got) == 1, what="other node goes on")


def test_a_flood_of_bad_frames_is_counted_in_full_but_logged_a_few_times(
    make_layer: LayerFactory, metrics: Metrics, logs: list[str]
) -> None:
    layer = make_layer()
    got: list[UpstreamMessage] = []
    layer.register_upstream("model", got.append)
    lc = FakeLC(layer.port, "noisy")
    for _ in range(50):
        lc.send_raw(BAD_FRAMES["invalid_json"])
    lc.send_status("model", "default", "after-flood", {})
    wait_until(lambda: len(got) == 1, what="good frame after the flood")
    assert sample(metrics, "lc_messages_rejected_total", reason="invalid_json") == 50
    lines = [line for line in logs if "rejected" in line and "noisy" in line]
    assert len(lines) == 5  # the burst; the rest are counted, not logged
