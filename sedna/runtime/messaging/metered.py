"""A websocket server connection that reports the bytes it buffers to a `FrameBudget`.

What a connection holds of the peer's data is the library's read buffer (a frame in
progress, the handshake before it) plus the data frames parsed but not yet taken by
the layer's reader. The first is measured where it is (`protocol.reader.buffer`), the
second is counted frame by frame as frames are parsed and message by message as the
reader takes them, so the figure is exact rather than wire bytes in minus bytes out
(which would drift with frame headers and control frames). The last frame parsed stays
alive in the library's parser until the next one is parsed, so it counts until then.
A `FrameGate` in front of
the library adds what the frame being received has announced but not yet sent, and
skips frames above `maxFrameBytes` unread.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.frames import DATA_OPCODES, Frame
from websockets.protocol import Event

from sedna.runtime.messaging.budget import FrameBudget
from sedna.runtime.messaging.frame_gate import FrameGate

# node name (or "" before the handshake), bytes it held, sum then, cap
RefusalHook = Callable[[str, int, int, int], None]
# node name (or "" before the handshake), size of a frame skipped unread
OversizeHook = Callable[[str, int], None]


class MeteredConnection(ServerConnection):
    """Counts its buffered bytes into `budget`; refused when the budget says so."""

    budget: FrameBudget
    on_refused: RefusalHook
    on_oversize: OversizeHook
    frame_limit: int
    library_limit: int
    node_header = "Node-Name"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._queued = 0  # bytes of parsed data frames the reader has not taken
        self._partial = 0  # bytes of the message whose last frame has not come yet
        self._messages: deque[int] = deque()  # sizes of complete messages not taken
        self._refused = False
        self._gate = FrameGate(self.frame_limit, self.library_limit)
        # the library's parser keeps the last frame it parsed until it parses the next
        self._last = 0

    def buffered_bytes(self) -> int:
        held = max(self._queued, self._last)  # the last frame is queued or kept, not both
        return len(self.protocol.reader.buffer) + held + self._gate.pending

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        passed, skipped = self._gate.feed(data)
        if passed:
            super().data_received(passed)
        for size in skipped:
            self.on_oversize(self._node(), size)
        self._account()

    def process_event(self, event: Event) -> None:
        super().process_event(event)
        if isinstance(event, Frame):
            self._last = len(event.data)
        if isinstance(event, Frame) and event.opcode in DATA_OPCODES:
            size = len(event.data)
            self._queued += size
            self._partial += size
            if event.fin:
                self._messages.append(self._partial)
                self._partial = 0

    def message_taken(self) -> None:
        """The layer's reader took the oldest waiting message and is done with it."""
        if self._messages:
            self._queued -= self._messages.popleft()
        self._account()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self.budget.release(self)

    def refuse_over_budget(self, held: int, used: int, cap: int) -> None:
        self._refused = True
        self.on_refused(self._node(), held, used, cap)
        self.transport.abort()

    def _node(self) -> str:
        request = self.request
        return request.headers.get(self.node_header, "").strip() if request is not None else ""

    def _account(self) -> None:
        if not self._refused:
            self.budget.update(self, self.buffered_bytes())


def metered_connection_class(
    budget: FrameBudget,
    on_refused: RefusalHook,
    frame_limit: int,
    library_limit: int,
    on_oversize: OversizeHook,
) -> type[MeteredConnection]:
    """A MeteredConnection subclass bound to one server's budget (websockets builds the
    connections itself, from a class)."""

    class _Metered(MeteredConnection):
        pass

    _Metered.budget = budget
    _Metered.on_refused = staticmethod(on_refused)
    _Metered.frame_limit = frame_limit
    _Metered.library_limit = library_limit
    _Metered.on_oversize = staticmethod(on_oversize)
    return _Metered
