"""A Go-like LC receives what controllers send and its status reports reach the handlers."""

from __future__ import annotations

import socket
import threading
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus

from sedna.runtime.messaging import UpstreamMessage, UpstreamRegistry
from sedna.runtime.metrics import Metrics

from .conftest import LayerFactory
from .helpers import FakeLC, obj, sample, upgraded_socket, wait_until


def test_lc_receives_job_and_model_and_reports_status(
    make_layer: LayerFactory, metrics: Metrics
) -> None:
    layer = make_layer()
    got: list[UpstreamMessage] = []
    layer.register_upstream("IncrementalLearningJob", got.append)
    lc = FakeLC(layer.port, "edge-1")
    wait_until(lambda: layer.connected_nodes() == ["edge-1"], what="node connected")

    job = obj("IncrementalLearningJob", "helmet", dataset="ds")
    model = obj("Model", "initial-model", url="s3://models/m.pb")
    layer.send("edge-1", "insert", job)
    layer.send("edge-1", "insert", model)
    first, second = lc.recv_all(2)

    assert first.header == {
        "namespace": "default",
        "resourceKind": "incrementallearningjob",
        "resourceName": "helmet",
        "operation": "insert",
    }
    assert first.payload == job
    assert second.header["resourceKind"] == "model"
    assert second.header["resourceName"] == "initial-model"
    assert second.payload == model
    # Byte for byte what Go's json.Encoder writes: header first, newline at the end.
    assert first.raw.startswith('{"header":{"namespace":"default","resourceKind":')
    assert first.raw.endswith('"}\n')

    report = {
        "phase": "train",
        "status": "completed",
        "output": {"models": [{"format": "pb", "url": "s3://out/m.pb"}]},
    }
    lc.send_status("incrementallearningjob", "default", "helmet", report)
    wait_until(lambda: len(got) == 1, what="status handled")
    assert got[0] == UpstreamMessage(
        node_name="edge-1",
        kind="incrementallearningjob",
        namespace="default",
        name="helmet",
        operation="status",
        content=report,
    )
    assert sample(metrics, "lc_messages_sent_total", kind="incrementallearningjob") == 1
    assert sample(metrics, "lc_messages_sent_total", kind="model") == 1
    # Counted by the socket thread after it queued the report, which the handler thread
    # may take and finish first.
    wait_until(
        lambda: sample(metrics, "lc_messages_received_total", kind="incrementallearningjob") == 1,
        what="the report counted",
    )
    assert sample(metrics, "lc_messages_received_total", kind="incrementallearningjob") == 1
    assert sample(metrics, "lc_connected_nodes") == 1
    # The LC's initial bare header was accepted silently.
    rejected = [
        s
        for fam in metrics.registry.collect()
        if fam.name == "lc_messages_rejected"
        for s in fam.samples
        if s.name.endswith("_total") and s.value
    ]
    assert rejected == []
    lc.close()
    wait_until(lambda: layer.connected_nodes() == [], what="node disconnected")
    # The gauge is set just after the connection is unregistered, outside the lock.
    wait_until(lambda: sample(metrics, "lc_connected_nodes") == 0, what="the gauge at 0")
    assert sample(metrics, "lc_connected_nodes") == 0


def test_update_goes_out_as_insert_and_delete_as_delete(make_layer: LayerFactory) -> None:
    layer = make_layer()
    lc = FakeLC(layer.port, "n")
    layer.send("n", "update", obj("Model", "m"))
    assert lc.recv().header["operation"] == "insert"
    layer.send("n", "delete", obj("Model", "m"))
    assert lc.recv().header["operation"] == "delete"


def test_update_kept_when_updates_as_insert_is_off(make_layer: LayerFactory) -> None:
    layer = make_layer(updatesAsInsert=False)
    lc = FakeLC(layer.port, "n")
    layer.send("n", "update", obj("Model", "m"))
    assert lc.recv().header["operation"] == "update"


def test_message_sent_while_offline_arrives_after_connect(
    make_layer: LayerFactory, metrics: Metrics
) -> None:
    layer = make_layer()
    layer.send("later", "insert", obj("Dataset", "d1"))
    assert layer.queue_depth("later") == 1
    assert sample(metrics, "lc_queue_depth", node="later") == 1
    lc = FakeLC(layer.port, "later")
    assert lc.recv().header["resourceName"] == "d1"
    wait_until(lambda: layer.queue_depth("later") == 0, what="queue drained")
    assert sample(metrics, "lc_queue_depth", node="later") == 0


def test_three_updates_while_offline_arrive_as_the_newest_only(make_layer: LayerFactory) -> None:
    layer = make_layer()
    layer.send("n", "insert", obj("Model", "other"))
    for version in (1, 2, 3):
        layer.send("n", "update", obj("Model", "m", version=version))
    layer.send("n", "insert", obj("Model", "last"))
    assert layer.queue_depth("n") == 3
    lc = FakeLC(layer.port, "n")
    got = lc.recv_all(3)
    # A replaced message keeps its key's place in the queue.
    assert [r.header["resourceName"] for r in got] == ["other", "m", "last"]
    assert got[1].payload["spec"] == {"version": 3}
    assert lc.nothing_waiting()


def test_send_does_not_share_the_callers_object(make_layer: LayerFactory) -> None:
    layer = make_layer()
    job = obj("Model", "m", version=1)
    layer.send("n", "insert", job)
    job["spec"]["version"] = 2  # a controller reusing its dict must not change what was sent
    lc = FakeLC(layer.port, "n")
    assert lc.recv().payload["spec"] == {"version": 1}


def test_queue_bound_drops_the_oldest_with_metric(
    make_layer: LayerFactory, metrics: Metrics, logs: list[str]
) -> None:
    layer = make_layer(maxQueuePerNode=3)
    for i in range(5):
        layer.send("far", "insert", obj("Model", f"m{i}"))
    assert layer.queue_depth("far") == 3
    assert sample(metrics, "lc_messages_dropped_total", kind="model") == 2
    dropped_logs = [line for line in logs if "dropped the oldest" in line]
    assert len(dropped_logs) == 2
    assert "default/m0" in dropped_logs[0] and "far" in dropped_logs[0]
    lc = FakeLC(layer.port, "far")
    assert [r.header["resourceName"] for r in lc.recv_all(3)] == ["m2", "m3", "m4"]


def _silent_lc(port: int, node: str) -> socket.socket:
    """An LC that completes the upgrade and then never reads: it answers no ping."""
    return upgraded_socket(port, node)


def test_a_live_connection_is_not_replaced(make_layer: LayerFactory, metrics: Metrics) -> None:
    """Two LCs with one node name no longer take turns: the live one keeps its node."""
    layer = make_layer()
    old = FakeLC(layer.port, "n")
    wait_until(lambda: layer.connected_nodes() == ["n"], what="first connection")
    with pytest.raises(InvalidStatus) as exc:
        FakeLC(layer.port, "n")
    assert exc.value.response.status_code == 409
    assert sample(metrics, "lc_messages_rejected_total", reason="already_connected") == 1
    layer.send("n", "insert", obj("Model", "m"))
    assert old.recv().header["resourceName"] == "m"


def test_a_connection_that_stops_answering_is_replaced(
    make_layer: LayerFactory, metrics: Metrics
) -> None:
    layer = make_layer(replaceProbeSeconds=0.3)
    dead = _silent_lc(layer.port, "n")
    try:
        wait_until(lambda: layer.connected_nodes() == ["n"], what="first connection")
        new = FakeLC(layer.port, "n")
        layer.send("n", "insert", obj("Model", "m"))
        assert new.recv().header["resourceName"] == "m"
        assert layer.connected_nodes() == ["n"]
        assert sample(metrics, "lc_connected_nodes") == 1
        new.close()
        wait_until(lambda: layer.connected_nodes() == [], what="node gone")
    finally:
        dead.close()


def test_slow_handler_does_not_stall_another_kind(make_layer: LayerFactory) -> None:
    layer = make_layer()
    release = threading.Event()
    slow_started = threading.Event()
    fast: list[UpstreamMessage] = []

    def slow(msg: UpstreamMessage) -> None:
        slow_started.set()
        release.wait(60)  # released by the test; the bound only ends a failed one

    layer.register_upstream("Model", slow)
    layer.register_upstream("Dataset", fast.append)
    lc = FakeLC(layer.port, "n")
    other = FakeLC(layer.port, "m")
    lc.send_status("model", "default", "m", {"status": "x"})
    assert slow_started.wait(30)
    lc.send_status("dataset", "default", "d", {"numberOfSamples": 10})
    other.send_status("dataset", "default", "d2", {"numberOfSamples": 20})
    wait_until(lambda: len(fast) == 2, what="fast kind handled while the slow one blocks")
    assert not release.is_set()
    # Downstream traffic goes on too.
    layer.send("n", "insert", obj("Model", "x"))
    assert lc.recv().header["resourceName"] == "x"
    release.set()


def test_handler_error_is_logged_with_context_and_worker_goes_on(
    make_layer: LayerFactory, logs: list[str]
) -> None:
    layer = make_layer()
    seen: list[str] = []

    def handler(msg: UpstreamMessage) -> None:
        seen.append(msg.name)
        if msg.name == "bad":
            raise RuntimeError("boom")

    layer.register_upstream("model", handler)
    lc = FakeLC(layer.port, "edge-7")
    lc.send_status("model", "ns1", "bad", {})
    lc.send_status("model", "ns1", "good", {})
    wait_until(lambda: seen == ["bad", "good"], what="both handled")
    errors = [line for line in logs if line.startswith("ERROR") and "boom" in line]
    assert errors
    assert "edge-7" in errors[0] and "model" in errors[0] and "ns1/bad" in errors[0]


def test_second_registration_for_a_kind_is_refused(make_layer: LayerFactory) -> None:
    layer = make_layer(start=False)
    layer.register_upstream("Model", lambda m: None)
    try:
        layer.register_upstream("model", lambda m: None)
    except ValueError as exc:
        assert "model" in str(exc)
    else:
        raise AssertionError("second registration accepted")


def test_send_validates_its_arguments(make_layer: LayerFactory) -> None:
    layer = make_layer(start=False)
    cases: list[tuple[str, str, dict[str, Any]]] = [
        ("n", "upsert", obj("Model", "m")),
        ("", "insert", obj("Model", "m")),
        ("n", "insert", {"metadata": {"name": "m"}}),
        ("n", "insert", {"kind": "Model", "metadata": {}}),
    ]
    for node, event, body in cases:
        with pytest.raises(ValueError):
            layer.send(node, event, body)


def test_reports_for_one_object_are_handled_in_order(make_layer: LayerFactory) -> None:
    layer = make_layer()
    seen: list[int] = []
    layer.register_upstream("model", lambda m: seen.append(m.content["seq"]))
    lc = FakeLC(layer.port, "n")
    for i in range(100):
        lc.send_status("model", "default", "m", {"seq": i})
    wait_until(lambda: len(seen) == 100, what="all reports")
    assert seen == list(range(100))


def test_handlers_registered_on_the_shared_registry_are_used(make_layer: LayerFactory) -> None:
    registry = UpstreamRegistry()
    layer = make_layer(upstream=registry)
    got: list[UpstreamMessage] = []
    registry.register("Dataset", got.append)  # as a feature does through its context
    lc = FakeLC(layer.port, "n")
    lc.send_status("dataset", "ns", "d", {"numberOfSamples": 3})
    wait_until(lambda: len(got) == 1, what="report handled")
    assert got[0].content == {"numberOfSamples": 3}
    assert layer.upstream is registry


def test_handler_backlog_full_refuses_reports(make_layer: LayerFactory, metrics: Metrics) -> None:
    layer = make_layer(upstream_backlog=1)
    release = threading.Event()
    busy = threading.Event()
    seen: list[str] = []

    def handler(msg: UpstreamMessage) -> None:
        busy.set()
        release.wait(60)  # released by the test; the bound only ends a failed one
        seen.append(msg.name)

    layer.register_upstream("model", handler)
    lc = FakeLC(layer.port, "n")
    lc.send_status("model", "default", "a", {})
    assert busy.wait(30)
    lc.send_status("model", "default", "b", {})  # waits in the backlog
    lc.send_status("model", "default", "c", {})  # refused
    wait_until(
        lambda: sample(metrics, "lc_messages_rejected_total", reason="handler_backlog") == 1,
        what="backlog refusal",
    )
    release.set()
    wait_until(lambda: seen == ["a", "b"], what="the rest handled")
