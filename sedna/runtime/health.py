"""/metrics, /healthz and /readyz on one small HTTP endpoint.

Readiness is a set of named checks (caches synced, websocket listening, ...) so the
answer says which one is failing, as kube-apiserver's /readyz?verbose does. A check may
return `(False, reason)` so that the answer also says why (e.g. which Secret is missing).

The probes must answer while anyone who reaches the port misbehaves, or the kubelet
restarts a healthy GM. So no thread waits for a request: one thread accepts and
reads the request line and headers of every connection without blocking, and only a
complete request goes to the small pool of workers. A request must be complete within
`request_timeout` in all (not per read: a sender of one byte every few seconds is
closed all the same), its head is at most `MAX_HEAD_BYTES`, and at most
`max_connections` connections may be sending theirs, `max_per_peer` from one address.
Over a bound the *oldest* such connection of that address (or of the address holding
the most) is closed, never the newcomer: a flood of slow connections then evicts only
its own, and a probe, which sends its request at once, is read before it could be
evicted. A response is written within `write_timeout` in all, or the connection is cut.
"""

from __future__ import annotations

import contextlib
import io
import re
import selectors
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from sedna.runtime.metrics_auth import BearerAuthenticator

Check = Callable[[], "bool | tuple[bool, str]"]
POOL_SIZE = 4
# complete requests waiting for a worker beyond the busy pool; more are closed at once
POOL_BACKLOG = 16
REQUEST_TIMEOUT_SECONDS = 5.0
WRITE_TIMEOUT_SECONDS = 10.0
MAX_CONNECTIONS = 64
MAX_CONNECTIONS_PER_PEER = 8
MAX_HEAD_BYTES = 16 * 1024
_END_OF_HEAD = re.compile(rb"\r?\n\r?\n")
_PUBLIC = ("/healthz", "/livez", "/readyz")


@dataclass
class _Pending:
    """A connection still sending its request line and headers."""

    sock: socket.socket
    peer: str
    deadline: float
    seq: int
    head: bytearray = field(default_factory=bytearray)


class _DeadlineWriter(io.RawIOBase):
    """The handler's wfile: every write must be done by one deadline for the response."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self._deadline = deadline

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        while view:
            left = self._deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("response not taken within the write timeout")
            self._sock.settimeout(left)
            sent = self._sock.send(view[: 64 * 1024])
            view = view[sent:]
        return len(data)


@dataclass
class _Request:
    sock: socket.socket
    head: bytes
    write_deadline: float


class GatedHTTPServer:
    """Reads request heads on one non-blocking thread; serves whole requests on a pool."""

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        *,
        workers: int = POOL_SIZE,
        backlog: int = POOL_BACKLOG,
        max_connections: int = MAX_CONNECTIONS,
        max_per_peer: int = MAX_CONNECTIONS_PER_PEER,
        request_timeout: float = REQUEST_TIMEOUT_SECONDS,
        write_timeout: float = WRITE_TIMEOUT_SECONDS,
    ) -> None:
        self._handler = handler
        self._max = max_connections
        self._max_per_peer = max_per_peer
        self._request_timeout = request_timeout
        self._write_timeout = write_timeout
        self._pending: dict[socket.socket, _Pending] = {}
        self._per_peer: Counter[str] = Counter()
        self._seq = 0
        self._stopping = threading.Event()
        self._done = threading.Event()
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self._listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._listener.bind(address)
            self._listener.listen(128)
        except OSError:
            self._listener.close()
            raise
        self._listener.setblocking(False)
        self.server_address: tuple[str, int] = self._listener.getsockname()[:2]
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="health")
        self._slots = threading.BoundedSemaphore(workers + backlog)
        self.evicted = 0  # connections closed for a bound or the request deadline

    @property
    def pending(self) -> int:
        """Connections still sending their request (for tests and debugging)."""
        return len(self._pending)

    def serve_forever(self) -> None:
        try:
            while not self._stopping.is_set():
                # no connection pending: sleep until one comes or `shutdown` writes to
                # the wake socket (an idle GM's health server used to wake every second)
                deadline = self._next_deadline()
                timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
                for key, _ in self._selector.select(timeout):
                    if key.fileobj is self._listener:
                        self._accept()
                    elif key.fileobj is self._wake_r:
                        with contextlib.suppress(OSError):
                            self._wake_r.recv(64)
                    else:
                        # an accept earlier in this round may have evicted it already
                        conn = self._pending.get(key.fileobj)  # type: ignore[call-overload]
                        if conn is not None:
                            self._read(conn)
                self._expire()
        finally:
            for conn in list(self._pending.values()):
                self._drop(conn)
            self._done.set()

    def _next_deadline(self) -> float | None:
        if not self._pending:
            return None
        return min(c.deadline for c in self._pending.values())

    def _accept(self) -> None:
        for _ in range(64):  # a bounded batch; the rest wait for the next round
            try:
                sock, addr = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # e.g. out of file descriptors: try again next round
                return
            sock.setblocking(False)
            peer = str(addr[0])
            if self._per_peer[peer] >= self._max_per_peer:
                self._evict_oldest(peer)
            elif len(self._pending) >= self._max:
                self._evict_oldest(self._per_peer.most_common(1)[0][0])
            self._seq += 1
            conn = _Pending(sock, peer, time.monotonic() + self._request_timeout, self._seq)
            self._pending[sock] = conn
            self._per_peer[peer] += 1
            self._selector.register(sock, selectors.EVENT_READ)

    def _evict_oldest(self, peer: str) -> None:
        mine = [c for c in self._pending.values() if c.peer == peer]
        if mine:
            self.evicted += 1
            self._drop(min(mine, key=lambda c: c.seq))

    def _read(self, conn: _Pending) -> None:
        try:
            data = conn.sock.recv(MAX_HEAD_BYTES + 1 - len(conn.head))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._drop(conn)
            return
        conn.head += data
        match = _END_OF_HEAD.search(conn.head)
        if match is None:
            if len(conn.head) > MAX_HEAD_BYTES:
                self.evicted += 1
                self._drop(conn, b"HTTP/1.0 431 Request Header Fields Too Large\r\n\r\n")
            return
        self._forget(conn)
        if not self._slots.acquire(blocking=False):
            self._close(conn.sock, b"HTTP/1.0 503 Service Unavailable\r\n\r\n")
            return
        request = _Request(
            conn.sock, bytes(conn.head[: match.end()]), time.monotonic() + self._write_timeout
        )
        try:
            self._pool.submit(self._serve, request, conn.peer)
        except RuntimeError:  # shutting down
            self._slots.release()
            self._close(conn.sock)

    def _serve(self, request: _Request, peer: str) -> None:
        try:
            request.sock.setblocking(True)
            self._handler(request, (peer, 0), self)  # type: ignore[arg-type]
        except Exception:
            pass  # a client that went away or did not take the answer: nothing to report
        finally:
            self._close(request.sock)
            self._slots.release()

    def _expire(self) -> None:
        now = time.monotonic()
        for conn in [c for c in self._pending.values() if c.deadline <= now]:
            self.evicted += 1
            self._drop(conn, b"HTTP/1.0 408 Request Timeout\r\n\r\n")

    def _forget(self, conn: _Pending) -> None:
        del self._pending[conn.sock]
        self._per_peer[conn.peer] -= 1
        if self._per_peer[conn.peer] <= 0:
            del self._per_peer[conn.peer]
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(conn.sock)

    def _drop(self, conn: _Pending, answer: bytes = b"") -> None:
        self._forget(conn)
        self._close(conn.sock, answer)

    @staticmethod
    def _close(sock: socket.socket, answer: bytes = b"") -> None:
        if answer:
            with contextlib.suppress(OSError):
                sock.setblocking(False)
                sock.send(answer)  # best effort, never waits
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop the loop and wait (bounded) until it has closed its connections."""
        self._stopping.set()
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        self._done.wait(timeout)

    def server_close(self) -> None:
        self._stopping.set()
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")  # a loop still running must not sleep on a closed selector
        self._pool.shutdown(wait=False, cancel_futures=True)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(self._listener)
        self._listener.close()
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()


class _Handler(BaseHTTPRequestHandler):
    """One request from the head the gate read; the answer through a deadline writer."""

    request: _Request

    def setup(self) -> None:
        self.connection = self.request.sock
        self.rfile = io.BytesIO(self.request.head)
        self.wfile = _DeadlineWriter(self.request.sock, self.request.write_deadline)  # type: ignore[assignment]

    def log_message(self, format: str, *args: object) -> None:  # quiet
        return


class HealthServer:
    def __init__(
        self,
        address: str,
        port: int,
        registry: CollectorRegistry,
        *,
        authenticator: BearerAuthenticator | None = None,
        workers: int = POOL_SIZE,
        backlog: int = POOL_BACKLOG,
        max_connections: int = MAX_CONNECTIONS,
        max_per_peer: int = MAX_CONNECTIONS_PER_PEER,
        request_timeout: float = REQUEST_TIMEOUT_SECONDS,
        write_timeout: float = WRITE_TIMEOUT_SECONDS,
    ) -> None:
        """`authenticator` guards /metrics; None serves it to anyone (`metrics.auth: none`)."""
        self._limits: dict[str, Any] = {
            "workers": workers,
            "backlog": backlog,
            "max_connections": max_connections,
            "max_per_peer": max_per_peer,
            "request_timeout": request_timeout,
            "write_timeout": write_timeout,
        }
        self._auth = authenticator
        self._address = address
        self._port = port
        self._registry = registry
        self._live: dict[str, Check] = {}
        self._ready: dict[str, Check] = {}
        self._server: GatedHTTPServer | None = None
        self._thread: threading.Thread | None = None
        # Prometheus cannot read /readyz: the same checks as gauges, run at scrape time.
        self._collector = _ReadinessCollector(self)
        registry.register(self._collector)

    def add_liveness(self, name: str, check: Check) -> None:
        self._live[name] = check

    def add_readiness(self, name: str, check: Check) -> None:
        self._ready[name] = check

    @property
    def port(self) -> int:
        return self._server.server_address[1] if self._server else self._port

    @property
    def server(self) -> GatedHTTPServer | None:
        return self._server

    def results(self, which: str) -> list[tuple[str, bool, str]]:
        """(name, passed, reason) of every check of `which` (healthz or readyz)."""
        checks = self._live if which == "healthz" else self._ready
        out = []
        for name, check in sorted(checks.items()):
            reason = ""
            try:
                result = check()
                if isinstance(result, tuple):
                    good, reason = bool(result[0]), str(result[1])
                else:
                    good = bool(result)
            except Exception as exc:
                good, reason = False, f"{type(exc).__name__}: {exc}"
            out.append((name, good, reason))
        return out

    def report(self, which: str) -> tuple[bool, str]:
        lines, ok = [], True
        for name, good, reason in self.results(which):
            ok = ok and good
            state = "ok" if good else "failed" + (f": {reason}" if reason else "")
            lines.append(f"[{'+' if good else '-'}]{name} {state}")
        lines.append(f"{which} check {'passed' if ok else 'failed'}")
        return ok, "\n".join(lines) + "\n"

    def answer(self, path: str, authorization: list[str] | None) -> tuple[int, bytes, str]:
        """(status, body, content type) of a GET; the probes need no credential."""
        text = "text/plain; charset=utf-8"
        if path in _PUBLIC:
            ok, report = self.report("readyz" if path == "/readyz" else "healthz")
            return 200 if ok else 503, report.encode(), text
        if path != "/metrics":
            return 404, b"not found\n", text
        if self._auth is not None and self._auth.status(authorization) != 200:
            return 401, b"Unauthorized: /metrics wants Authorization: Bearer <token>\n", text
        return 200, generate_latest(self._registry), CONTENT_TYPE_LATEST

    def start(self) -> None:
        outer = self

        class Handler(_Handler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                code, body, ctype = outer.answer(path, self.headers.get_all("Authorization"))
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                if code == 401:
                    self.send_header("WWW-Authenticate", 'Bearer realm="sedna-gm metrics"')
                self.end_headers()
                self.wfile.write(body)

        self._server = GatedHTTPServer((self._address, self._port), Handler, **self._limits)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="health-server", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        with contextlib.suppress(KeyError):
            self._registry.unregister(self._collector)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None


class _ReadinessCollector(Collector):
    """`gm_ready` (1 when /readyz passes) and `gm_readiness_check{check}` per check."""

    def __init__(self, health: HealthServer) -> None:
        self._health = health

    def collect(self) -> Iterator[GaugeMetricFamily]:
        results = self._health.results("readyz")
        ready = GaugeMetricFamily("gm_ready", "1 while /readyz passes (only the leader is ready)")
        ready.add_metric([], 1.0 if results and all(good for _, good, _ in results) else 0.0)
        checks = GaugeMetricFamily(
            "gm_readiness_check", "1 while the named readiness check passes", labels=["check"]
        )
        for name, good, _ in results:
            checks.add_metric([name], 1.0 if good else 0.0)
        yield ready
        yield checks
