"""Reads websocket frame headers off the wire before the library buffers their payload.

The websockets library reads a whole frame into memory before anyone can judge it, and
copies it on the way (the read buffer, a slice, the unmasked bytes, the decoded text):
an LC that sends frames just under the library's limit made the GM allocate several
times their size, out of reach of the frame budget, which counts only what is held
between reads. `FrameGate` sits in front of the library and sees each frame header as
it arrives:

- a complete (unfragmented) data frame announced above `maxFrameBytes` and up to the
  library's limit is skipped as it streams in, never held; the layer counts it as a
  refused frame (`frame_too_large`) and the connection goes on, as before;
- a frame announced above the library's limit goes to the library, which ends the
  connection (1009) at its header, before reading its payload, as before;
- any other frame goes through, and its announced length counts as held from its
  header on (`pending`), so the budget refuses the peer that holds the most before
  the payload is read, not once it is.

Fragmented messages go through whole (the library assembles them, within its own
limit). The handshake request has no body (RFC 6455), so frames start right after its
blank line, where the library's parser starts reading them too.
"""

from __future__ import annotations

import struct

_END_OF_HEAD = b"\r\n\r\n"
_TEXT, _BINARY, _CONTINUATION = 1, 2, 0


class FrameGate:
    """Filters one connection's incoming bytes: what the library gets, what is skipped."""

    def __init__(self, limit: int, library_limit: int) -> None:
        self.limit = limit
        self.library_limit = library_limit
        self._held = True  # the frame going through will be buffered (within the library's limit)
        self._in_head = True  # still in the HTTP upgrade request
        self._tail = b""  # the last bytes of the head seen, to find its end across reads
        self._header = bytearray()
        self._passing = 0  # payload bytes of the current frame still to pass on
        self._skipping = 0  # payload bytes of the current frame still to skip
        self._skipped_size = 0
        self._fragmented = False  # a data frame without FIN went through

    @property
    def pending(self) -> int:
        """Announced payload bytes of the frame going through that have not arrived yet."""
        return self._passing if self._held else 0

    def feed(self, data: bytes) -> tuple[bytes, list[int]]:
        """(bytes for the library, sizes of the frames skipped while reading `data`)."""
        view = memoryview(data)
        out: list[memoryview] = []
        skipped: list[int] = []
        pos = 0
        if self._in_head:
            pos = self._head_end(data)
            out.append(view[:pos])
        end = len(data)
        while pos < end:
            if self._skipping:
                n = min(self._skipping, end - pos)
                self._skipping -= n
                pos += n
                if not self._skipping:
                    skipped.append(self._skipped_size)
            elif self._passing:
                n = min(self._passing, end - pos)
                out.append(view[pos : pos + n])
                self._passing -= n
                pos += n
            else:
                pos = self._read_header(view, pos, out, skipped)
        if len(out) == 1 and len(out[0]) == end:
            return data, skipped
        return b"".join(out), skipped

    def _head_end(self, data: bytes) -> int:
        """Where the upgrade request ends in `data` (all of it while it goes on)."""
        joined = self._tail + data
        at = joined.find(_END_OF_HEAD)
        if at < 0:
            self._tail = joined[-3:]
            return len(data)
        self._in_head = False
        self._tail = b""
        return at + len(_END_OF_HEAD) - (len(joined) - len(data))

    def _read_header(
        self, view: memoryview, pos: int, out: list[memoryview], skipped: list[int]
    ) -> int:
        header = self._header
        need = _header_size(header)
        while len(header) < need and pos < len(view):
            header.append(view[pos])
            pos += 1
            need = _header_size(header)
        if len(header) < need:
            return pos
        length = _payload_length(header)
        opcode = header[0] & 0x0F
        fin = bool(header[0] & 0x80)
        oversize = self.limit < length <= self.library_limit
        if opcode in (_TEXT, _BINARY) and fin and not self._fragmented and oversize:
            self._skipping = self._skipped_size = length
        else:
            out.append(memoryview(bytes(header)))
            self._passing = length
            self._held = length <= self.library_limit
            if opcode in (_TEXT, _BINARY):
                self._fragmented = not fin
            elif opcode == _CONTINUATION and fin:
                self._fragmented = False
        self._header = bytearray()
        return pos


def _header_size(header: bytearray) -> int:
    """Bytes of the frame header given its first bytes (2 until the second is known)."""
    if len(header) < 2:
        return 2
    code = header[1] & 0x7F
    extended = 2 if code == 126 else 8 if code == 127 else 0
    return 2 + extended + (4 if header[1] & 0x80 else 0)


def _payload_length(header: bytearray) -> int:
    code = header[1] & 0x7F
    if code == 126:
        return int(struct.unpack_from("!H", header, 2)[0])
    if code == 127:
        return int(struct.unpack_from("!Q", header, 2)[0])
    return code
