"""Who handles the status reports that LCs send for each kind.

Kept apart from the websocket transport so an embedding application with its own
transport dispatches to the same handlers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class DuplicateHandlerError(ValueError):
    """Two features registered a handler for one kind: a startup error."""


@dataclass(frozen=True)
class UpstreamMessage:
    node_name: str
    kind: str
    namespace: str
    name: str
    operation: str
    content: dict[str, Any] = field(default_factory=dict)


UpstreamHandler = Callable[[UpstreamMessage], None]


class UpstreamRegistry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._handlers: dict[str, UpstreamHandler] = {}

    def register(self, kind: str, handler: UpstreamHandler) -> None:
        key = kind.lower()
        with self._lock:
            if key in self._handlers:
                raise DuplicateHandlerError(
                    f"an upstream handler for kind {key} is already registered"
                )
            self._handlers[key] = handler

    def handler_for(self, kind: str) -> UpstreamHandler | None:
        return self._handlers.get(kind.lower())

    def kinds(self) -> list[str]:
        with self._lock:
            return sorted(self._handlers)

    def dispatch(self, message: UpstreamMessage) -> bool:
        """Run the handler for the message's kind in the caller's thread; False if none."""
        handler = self.handler_for(message.kind)
        if handler is None:
            return False
        handler(message)
        return True
