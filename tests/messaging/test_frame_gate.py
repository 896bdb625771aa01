"""FrameGate on hostile byte streams: headers split anywhere, fragments, control frames,
lengths beyond any limit. What it passes on must be exactly what the library needs."""

from __future__ import annotations

import struct

from sedna.runtime.messaging.frame_gate import FrameGate

HEAD = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
LIMIT, LIBRARY = 100, 400


def frame(opcode: int, size: int, *, fin: bool = True) -> bytes:
    first = (0x80 if fin else 0) | opcode
    if size < 126:
        head = bytes([first, 0x80 | size])
    elif size < 65536:
        head = bytes([first, 0x80 | 126]) + struct.pack("!H", size)
    else:
        head = bytes([first, 0x80 | 127]) + struct.pack("!Q", size)
    return head + b"\0\0\0\0" + b"p" * size


def run(stream: bytes, step: int) -> tuple[bytes, list[int], FrameGate]:
    gate = FrameGate(LIMIT, LIBRARY)
    out, skipped = b"", []
    for i in range(0, len(stream), step):
        passed, sk = gate.feed(stream[i : i + step])
        out += passed
        skipped += sk
    return out, skipped, gate


def test_oversize_frames_are_skipped_and_the_rest_passes_byte_for_byte() -> None:
    small, big, ping = frame(1, 50), frame(1, 300), frame(9, 4)
    stream = HEAD + small + big + ping + small
    for step in (1, 2, 3, 7, 64, len(stream)):  # every split of headers and the head's end
        out, skipped, gate = run(stream, step)
        assert out == HEAD + small + ping + small, step
        assert skipped == [300]
        assert gate.pending == 0


def test_fragments_and_frames_beyond_the_library_limit_go_to_the_library() -> None:
    first, cont, last = frame(1, 300, fin=False), frame(0, 300, fin=False), frame(0, 10)
    huge = frame(2, 500)[:20]  # above the library's limit: it ends the connection itself
    stream = HEAD + first + cont + last + huge
    out, skipped, gate = run(stream, 5)
    assert out == stream and skipped == []
    assert gate.pending == 0  # the library will not buffer the huge one: not counted


def test_a_frame_counts_for_its_announced_size_from_its_header_on() -> None:
    gate = FrameGate(LIMIT, LIBRARY)
    gate.feed(HEAD)
    passed, _ = gate.feed(frame(1, 90)[:10])
    assert gate.pending == 90 - 4  # header and mask, 4 of 90 payload bytes passed
    assert len(passed) == 10
    bogus = FrameGate(10**9, 2**64)
    # a first fragment announcing 8 EiB: it goes to the library, counted in full
    bogus.feed(HEAD + bytes([0x01, 0xFF]) + struct.pack("!Q", 2**63 - 1) + b"\0\0\0\0")
    assert bogus.pending == 2**63 - 1  # the budget refuses such a peer at once


def test_nothing_before_the_end_of_the_upgrade_request_is_taken_for_a_frame() -> None:
    gate = FrameGate(LIMIT, LIBRARY)
    request = b"GET / HTTP/1.1\r\nX: " + frame(1, 300)[:14] + b"\r\n\r\n"
    passed, skipped = gate.feed(request)
    assert passed == request and skipped == [] and gate.pending == 0
