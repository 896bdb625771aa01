"""A token per node: `Node-Name` must match the credential, and tokens live in Secrets.

Regression tests for: "All LCs share one token and `Node-Name` is self-declared"; a
forger connecting as `edge-node` received that node's specs and kicked the real LC off.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import kubernetes
import pytest
from websockets.exceptions import InvalidStatus

from sedna.runtime.config import WebsocketConfig
from sedna.runtime.kube import SECRETS, KubeClient, NotFound
from sedna.runtime.messaging import MessageLayer
from sedna.runtime.messaging.auth import node_token_provider
from sedna.runtime.metrics import Metrics
from sedna.tokens import issue_node_token

from .helpers import FakeLC, obj, sample

TOKENS = {"edge-node": {"tok-edge"}, "node-b": {"tok-b"}}


@pytest.fixture()
def layer(metrics: Metrics) -> Iterator[MessageLayer]:
    settings = WebsocketConfig(address="127.0.0.1", port=0, auth="node")
    layer = MessageLayer(
        settings, metrics=metrics, node_token_provider=lambda n: TOKENS.get(n, set())
    )
    layer.start()
    try:
        yield layer
    finally:
        layer.stop()


def _refused(port: int, node: str, token: str | None) -> int:
    with pytest.raises(InvalidStatus) as exc:
        FakeLC(port, node, token=token)
    return int(exc.value.response.status_code)


def test_a_token_proves_one_node_only(layer: MessageLayer, metrics: Metrics) -> None:
    assert _refused(layer.port, "edge-node", "tok-b") == 401  # node-b's token
    assert _refused(layer.port, "edge-node", None) == 401
    assert _refused(layer.port, "unknown", "tok-edge") == 401
    assert sample(metrics, "lc_messages_rejected_total", reason="unauthorized") == 3
    lc = FakeLC(layer.port, "edge-node", token="tok-edge")
    layer.send("edge-node", "insert", obj("Model", "m"))
    assert lc.recv().header["resourceName"] == "m"


def test_another_credential_cannot_take_a_connected_node(layer: MessageLayer) -> None:
    TOKENS["edge-node"] = {"tok-edge", "tok-rotated"}
    try:
        FakeLC(layer.port, "edge-node", token="tok-edge")
        assert _refused(layer.port, "edge-node", "tok-rotated") == 409
    finally:
        TOKENS["edge-node"] = {"tok-edge"}


def test_unknown_nodes_get_no_queue(layer: MessageLayer) -> None:
    with pytest.raises(InvalidStatus):
        FakeLC(layer.port, "made-up", token="x")
    assert layer.queued_nodes() == []


def test_token_create_writes_a_labelled_secret_the_gm_reads(api_client: Any) -> None:
    kube = KubeClient(api_client)
    ns = f"t-{uuid.uuid4().hex[:10]}"
    kubernetes.client.CoreV1Api(api_client).create_namespace({"metadata": {"name": ns}})
    provide = node_token_provider(lambda n, name: _get(kube, n, name), ns)
    first = issue_node_token(kube, "edge-node", ns)
    assert provide("edge-node") == {first} and provide("node-b") == frozenset()
    second = issue_node_token(kube, "edge-node", ns)  # rotation
    assert second != first and provide("edge-node") == {second}
    # a copy of the Secret under another node's name grants nothing (the label decides)
    body = kube.resource(SECRETS).get(ns, "sedna-lc-token-edge-node")
    copy = {"metadata": {"name": "sedna-lc-token-node-b", "labels": body["metadata"]["labels"]},
            "data": body["data"]}  # fmt: skip
    kube.resource(SECRETS).create(ns, copy)
    assert provide("node-b") == frozenset()


def _get(kube: KubeClient, ns: str, name: str) -> Any:
    try:
        return kube.resource(SECRETS).get(ns, name)
    except NotFound:
        return None


def test_address_binding_accepts_a_node_name_only_from_its_addresses(metrics: Metrics) -> None:
    """With auth: none the identity is bound as far as it can be: by the Node's addresses."""
    addresses = {"edge-node": ["127.0.0.1", "10.0.0.5"], "far-node": ["10.0.0.9"]}
    settings = WebsocketConfig(address="127.0.0.1", port=0, auth="none", nodeAddressBinding=True)
    layer = MessageLayer(settings, metrics=metrics, node_addresses=addresses.get)
    layer.start()
    try:
        assert _refused(layer.port, "far-node", None) == 403
        assert _refused(layer.port, "no-such-node", None) == 403
        assert sample(metrics, "lc_messages_rejected_total", reason="address_mismatch") == 2
        lc = FakeLC(layer.port, "edge-node")
        layer.send("edge-node", "insert", obj("Model", "m"))
        assert lc.recv().header["resourceName"] == "m"
    finally:
        layer.stop()
