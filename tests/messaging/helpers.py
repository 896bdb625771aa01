"""A stand-in for Sedna's Go LocalController, speaking the wire protocol over a real socket.

It does what `pkg/localcontroller/gmclient/websocket.go` does: dial with the
`Node-Name` header, write one bare empty header, then exchange
`{"header": ..., "content": <base64 JSON>}` text frames.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from support.waiting import poll
from websockets.sync.client import ClientConnection, connect

from sedna.runtime.metrics import Metrics

GO_HELLO = '{"namespace":"","resourceKind":"","resourceName":"","operation":""}'


def wait_until(pred: Callable[[], bool], timeout: float = 5.0, what: str = "condition") -> None:
    """Poll until pred() holds; fail the test after timeout (a deadline, not a timing assert)."""
    poll(pred, timeout, interval=0.005, failure=f"timed out waiting for {what}")


def sample(metrics: Metrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, labels)
    return 0.0 if value is None else float(value)


def frame(
    kind: str,
    namespace: str,
    name: str,
    payload: Any,
    operation: str = "status",
) -> str:
    """A frame as Go's WriteJSON writes model.Message (content is base64 JSON)."""
    content = base64.b64encode(json.dumps(payload).encode()).decode()
    header = {
        "namespace": namespace,
        "resourceKind": kind,
        "resourceName": name,
        "operation": operation,
    }
    return json.dumps({"header": header, "content": content}) + "\n"


@dataclass
class Received:
    header: dict[str, str]
    payload: dict[str, Any]
    raw: str


def parse(raw: str | bytes) -> Received:
    assert isinstance(raw, str), "GM frames are text frames"
    doc = json.loads(raw)
    payload = json.loads(base64.b64decode(doc["content"], validate=True))
    return Received(header=doc["header"], payload=payload, raw=raw)


class FakeLC:
    """One edge node's LC."""

    def __init__(
        self,
        port: int,
        node: str,
        *,
        token: str | None = None,
        ssl_context: ssl.SSLContext | None = None,
        hello: bool = True,
        host: str = "127.0.0.1",
    ) -> None:
        headers = {"Node-Name": node}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        scheme = "wss" if ssl_context is not None else "ws"
        self.node = node
        self.ws: ClientConnection = connect(
            f"{scheme}://{host}:{port}/",
            additional_headers=headers,
            ssl=ssl_context,
            open_timeout=5,
            max_size=None,
            compression=None,
            legacy=True,
        )
        if hello:
            self.ws.send(GO_HELLO)

    def recv(self, timeout: float = 5.0) -> Received:
        return parse(self.ws.recv(timeout=timeout))

    def recv_all(self, n: int, timeout: float = 5.0) -> list[Received]:
        return [self.recv(timeout) for _ in range(n)]

    def nothing_waiting(self, timeout: float = 0.2) -> bool:
        try:
            self.ws.recv(timeout=timeout)
        except TimeoutError:
            return True
        return False

    def send_status(self, kind: str, namespace: str, name: str, payload: Any) -> None:
        self.ws.send(frame(kind, namespace, name, payload))

    def send_raw(self, data: str | bytes) -> None:
        self.ws.send(data)

    def close(self) -> None:
        self.ws.close()


def obj(
    kind: str,
    name: str,
    namespace: str = "default",
    *,
    annotations: Mapping[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}"}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": kind,
        "metadata": meta,
        "spec": dict(spec),
    }


def upgraded_socket(
    port: int, node: str, token: str | None = None, timeout: float = 5.0
) -> socket.socket:
    """A raw socket past the websocket upgrade as `node` (with a bearer `token`), for
    tests that write frame bytes themselves."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    key = base64.b64encode(os.urandom(16)).decode()
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    sock.sendall(
        (
            f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            f"Sec-WebSocket-Version: 13\r\nNode-Name: {node}\r\n{auth}\r\n"
        ).encode()
    )
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = sock.recv(4096)
        assert chunk, "the server closed the handshake"
        answer += chunk
    assert answer.startswith(b"HTTP/1.1 101"), answer[:80]
    return sock
