"""RSS of the LC websocket server under large frames from many authenticated LCs.

A child process runs the message layer (`auth: node`, a token per node); this process
plays `--lcs` LCs, each sending `--frames` text frames of `--size` bytes, all LCs at
once (every header and a first slice, then the rest), and reads the child's VmRSS,
the budget's peak and the refusals by reason. Two configurations: the defaults
(`maxFrameBytes` 1 MiB: the frames are above it) and `maxFrameBytes` 4 MiB (they are
within it and count against `maxBufferedBytes`, 64 MiB). Writes
`bench/results/lc_frames.json`.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import platform
import socket
import struct
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results" / "lc_frames.json"

CHILD = r"""
import json, sys
from sedna.runtime.config import WebsocketConfig
from sedna.runtime.messaging import MessageLayer
from sedna.runtime.metrics import Metrics
from loguru import logger
logger.remove()
fields = json.loads(sys.argv[1])
tokens = {f"lc-{i}": {f"token-{i}"} for i in range(int(sys.argv[2]))}
m = Metrics()
layer = MessageLayer(WebsocketConfig(address="127.0.0.1", port=0, auth="node", **fields),
                     metrics=m, node_token_provider=lambda n: tokens.get(n, set()))
layer.register_upstream("Dataset", lambda msg: None)
layer.start()
print(layer.port, flush=True)
def rejected(reason):
    return m.lc_messages_rejected.labels(reason=reason)._value.get()
import ctypes, gc
def trim():  # what the C allocator keeps of freed memory, handed back: the rest is live
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
for line in sys.stdin:
    if line.startswith("trim"):
        trim()
    rss = next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmRSS:"))
    print(json.dumps({"rss_kib": rss, "held": layer.buffered_bytes,
                      "peak": layer.buffered_bytes_peak,
                      "buffer_full": rejected("buffer_full"),
                      "frame_too_large": rejected("frame_too_large")}), flush=True)
layer.stop()
"""


def _connect(port: int, node: str, token: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nNode-Name: {node}\r\n"
            f"Authorization: Bearer {token}\r\n\r\n"
        ).encode()
    )
    answer = b""
    while b"\r\n\r\n" not in answer:
        answer += sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 101"), answer[:80]
    return sock


def _frame(size: int) -> tuple[bytes, bytes]:
    """(header and a first slice, the rest) of a masked (zero key) JSON text frame."""
    body = b'{"x":"' + b"a" * (size - 8) + b'"}'
    head = bytes([0x81, 0x80 | 127]) + struct.pack("!Q", size) + b"\0\0\0\0"
    return head + body[:65536], body[65536:]


def _scenario(name: str, fields: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, json.dumps(fields), str(args.lcs)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    port = int(child.stdout.readline())

    def stats(command: str = "stats") -> dict[str, Any]:
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(command + "\n")
        child.stdin.flush()
        return dict(json.loads(child.stdout.readline()))

    socks = [_connect(port, f"lc-{i}", f"token-{i}") for i in range(args.lcs)]
    time.sleep(1)
    before = stats()
    first, rest = _frame(args.size)

    def send(sock: socket.socket, data: bytes) -> None:
        with contextlib.suppress(OSError):  # cut by the budget
            sock.sendall(data)

    for _ in range(args.frames):
        threads = [threading.Thread(target=send, args=(s, first)) for s in socks]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        threads = [threading.Thread(target=send, args=(s, rest)) for s in socks]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    deadline = time.monotonic() + 60
    after = stats()
    expected = args.lcs * args.frames
    while time.monotonic() < deadline and (
        after["held"] or after["frame_too_large"] + after["buffer_full"] < min(expected, 1)
    ):
        time.sleep(0.2)
        after = stats()
    time.sleep(1)
    after = stats()
    trimmed = stats("trim")
    for s in socks:
        s.close()
    child.stdin.close()
    child.wait(30)
    return {
        "config": fields or "defaults",
        "rss_mib_before": round(before["rss_kib"] / 1024, 1),
        "rss_mib_after": round(after["rss_kib"] / 1024, 1),
        "rss_growth_mib": round((after["rss_kib"] - before["rss_kib"]) / 1024, 1),
        # after malloc_trim: what is live, not kept by the allocator for reuse
        "rss_growth_mib_after_malloc_trim": round(
            (trimmed["rss_kib"] - before["rss_kib"]) / 1024, 1
        ),
        "budget_peak_mib": round(after["peak"] / 2**20, 1),
        "buffer_full": after["buffer_full"],
        "frame_too_large": after["frame_too_large"],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lcs", type=int, default=20)
    ap.add_argument("--frames", type=int, default=3)
    ap.add_argument("--size", type=int, default=3_900_000)
    ap.add_argument("--label", default="this branch", help="key of this run in the results")
    args = ap.parse_args()
    runs = {
        "maxFrameBytes 1 MiB (default)": _scenario("default", {}, args),
        "maxFrameBytes 4 MiB": _scenario("4mib", {"maxFrameBytes": 4 * 2**20}, args),
    }
    result = {
        "lcs": args.lcs,
        "frames_each": args.frames,
        "frame_bytes": args.size,
        "maxBufferedBytes_mib": 64,
        "runs": runs,
        "command": "python bench/bench_lc_frames.py " + " ".join(sys.argv[1:]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
    }
    recorded = json.loads(RESULTS.read_text()).get("labels", {}) if RESULTS.exists() else {}
    recorded[args.label] = result
    RESULTS.write_text(json.dumps({"benchmark": "lc_frames", "labels": recorded}, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
