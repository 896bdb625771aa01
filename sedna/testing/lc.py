"""A test LC: one edge node's LocalController as the Go LC speaks to the GM.

It dials with the `Node-Name` header, writes one bare empty header, then exchanges
`{"header": ..., "content": <base64 JSON>}` text frames over a real websocket.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from websockets.sync.client import ClientConnection, connect

from sedna.testing.waiting import wait_until

GO_HELLO = '{"namespace":"","resourceKind":"","resourceName":"","operation":""}'


@dataclass
class Received:
    operation: str
    kind: str  # the header's resourceKind
    namespace: str
    name: str
    content: str  # the frame's content as sent: base64 of the JSON object
    payload: dict[str, Any]


@dataclass
class LCBase:
    """Collects what the GM sends this node, sends status reports.

    A feature's subclass adds its own `messages`/`wait_for`/`report` on top of
    `select`, `await_message` and `send_status`.
    """

    port: int
    node: str
    received: list[Received] = field(default_factory=list)

    __test__ = False  # not a pytest class
    # decode content with b64decode(validate=True): a test of the frames' encoding
    strict_base64: ClassVar[bool] = False

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self.ws: ClientConnection = connect(
            f"ws://127.0.0.1:{self.port}/",
            additional_headers={"Node-Name": self.node},
            open_timeout=5,
            max_size=None,
            compression=None,
            legacy=True,
        )
        self.ws.send(GO_HELLO)
        self._thread = threading.Thread(target=self._read, daemon=True, name=f"lc-{self.node}")
        self._thread.start()

    def _read(self) -> None:
        try:
            for raw in self.ws:
                doc = json.loads(raw)
                head = doc["header"]
                payload = json.loads(base64.b64decode(doc["content"], validate=self.strict_base64))
                with self._lock:
                    self.received.append(
                        Received(
                            head["operation"],
                            head["resourceKind"],
                            head["namespace"],
                            head["resourceName"],
                            doc["content"],
                            payload,
                        )
                    )
        except Exception:  # connection closed by the GM or the test
            return

    def select(
        self, kind: str | None = None, operation: str | None = None, name: str | None = None
    ) -> list[Received]:
        with self._lock:
            return [
                m
                for m in self.received
                if (kind is None or m.kind == kind)
                and (operation is None or m.operation == operation)
                and (name is None or m.name == name)
            ]

    def clear(self) -> None:
        with self._lock:
            self.received.clear()

    def await_message(
        self,
        kind: str,
        operation: str,
        name: str,
        pred: Callable[[Received], bool] = lambda m: True,
        timeout: float = 5.0,
    ) -> Received:
        """The newest message so far of that kind, operation and name for which pred holds."""

        def find() -> Received | None:
            for m in reversed(self.select(kind, operation, name)):
                if pred(m):
                    return m
            return None

        found = wait_until(find, timeout, f"{operation} {kind} {name} on LC {self.node}")
        assert isinstance(found, Received)
        return found

    def send_status(self, namespace: str, kind: str, name: str, payload: Any) -> None:
        """A status report as the Go LC writes it (`kind` is the header's resourceKind)."""
        content = base64.b64encode(json.dumps(payload).encode()).decode()
        header = {
            "namespace": namespace,
            "resourceKind": kind,
            "resourceName": name,
            "operation": "status",
        }
        self.ws.send(json.dumps({"header": header, "content": content}) + "\n")

    def close(self) -> None:
        self.ws.close()
