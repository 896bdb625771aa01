"""How much memory asyncio gives each TLS connection for reading.

asyncio's TLS layer (`asyncio.sslproto.SSLProtocol`) allocates a zero-filled read buffer
of `max_size` bytes, 256 KiB, for every connection as it is accepted, and keeps it for
the connection's life: 2,000 idle watches on the embedded API server, or 2,000 LCs on
the websocket, held 500 MB of RSS in those buffers alone. A TLS record carries at most
16 KiB of data (plus its header and tag), so a smaller buffer costs only a few more
reads for large bodies.

The knob is a class attribute of the standard library, so it is set for the whole
process, by every server of ours that accepts TLS, before it listens; it only ever
lowers the figure.
"""

from __future__ import annotations

import asyncio.sslproto

TLS_READ_BUFFER_BYTES = 32 * 1024


def limit_tls_read_buffers(size: int = TLS_READ_BUFFER_BYTES) -> None:
    """Cap asyncio's per-connection TLS read buffer at `size` bytes."""
    proto: type = asyncio.sslproto.SSLProtocol
    if getattr(proto, "max_size", 0) > size:
        proto.max_size = size  # type: ignore[attr-defined]
