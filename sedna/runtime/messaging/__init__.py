"""The edge message layer: the GM end of Sedna's LocalController websocket protocol.

Controllers call `MessageLayer.send` (downstream, never blocks) and register one
upstream handler per kind; everything network-facing lives on the layer's own
asyncio thread. See `server` for the behaviour and where it differs from Go's GM.
"""

from __future__ import annotations

from sedna.runtime.messaging.auth import (
    TokenProvider,
    bearer_token,
    file_token_provider,
    secret_token_provider,
    token_valid,
)
from sedna.runtime.messaging.credential import attach_credential
from sedna.runtime.messaging.server import MessageLayer
from sedna.runtime.messaging.wire import CREDENTIAL_ANNOTATION, Reason

# The upstream types are the runtime's own, re-exported for convenience.
from sedna.runtime.upstream import (
    DuplicateHandlerError,
    UpstreamHandler,
    UpstreamMessage,
    UpstreamRegistry,
)

__all__ = [
    "CREDENTIAL_ANNOTATION",
    "DuplicateHandlerError",
    "MessageLayer",
    "Reason",
    "TokenProvider",
    "UpstreamHandler",
    "UpstreamMessage",
    "UpstreamRegistry",
    "attach_credential",
    "bearer_token",
    "file_token_provider",
    "secret_token_provider",
    "token_valid",
]
