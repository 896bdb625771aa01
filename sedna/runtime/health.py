"""/metrics, /healthz and /readyz on one small HTTP endpoint.

Readiness is a set of named checks (caches synced, websocket listening, ...) so the
answer says which one is failing, as kube-apiserver's /readyz?verbose does. A check may
return `(False, reason)` so that the answer also says why (e.g. which Secret is missing).

A thread per connection (ThreadingHTTPServer) lets idle connections pile up threads;
here a fixed pool serves them, a connection beyond the pool and its small backlog is
closed at once, and a connection that sends nothing for `timeout` seconds is dropped.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

Check = Callable[[], "bool | tuple[bool, str]"]
POOL_SIZE = 4
# connections accepted beyond the busy pool before further ones are closed at once
POOL_BACKLOG = 16
IDLE_TIMEOUT_SECONDS = 10.0


class PooledHTTPServer(HTTPServer):
    """HTTPServer whose requests run on a bounded pool of threads."""

    def __init__(self, address: tuple[str, int], handler: Any, workers: int, backlog: int) -> None:
        # before binding: a failed bind calls server_close(), which shuts the pool down
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="health")
        self._slots = threading.BoundedSemaphore(workers + backlog)
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)  # full: refuse instead of queueing without bound
            return

        def run() -> None:
            try:
                self.finish_request(request, client_address)
            except Exception:
                self.handle_error(request, client_address)
            finally:
                self.shutdown_request(request)
                self._slots.release()

        self._pool.submit(run)

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # a client that went away or timed out: nothing to report

    def server_close(self) -> None:
        super().server_close()
        self._pool.shutdown(wait=False, cancel_futures=True)


class HealthServer:
    def __init__(
        self,
        address: str,
        port: int,
        registry: CollectorRegistry,
        *,
        workers: int = POOL_SIZE,
        backlog: int = POOL_BACKLOG,
        idle_timeout: float = IDLE_TIMEOUT_SECONDS,
    ) -> None:
        self._workers = workers
        self._backlog = backlog
        self._idle_timeout = idle_timeout
        self._address = address
        self._port = port
        self._registry = registry
        self._live: dict[str, Check] = {}
        self._ready: dict[str, Check] = {}
        self._server: PooledHTTPServer | None = None
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

    def start(self) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            timeout = outer._idle_timeout  # socket timeout: an idle client is dropped

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, generate_latest(outer._registry), CONTENT_TYPE_LATEST)
                elif path in ("/healthz", "/livez", "/readyz"):
                    ok, text = outer.report("readyz" if path == "/readyz" else "healthz")
                    self._send(200 if ok else 503, text.encode(), "text/plain; charset=utf-8")
                else:
                    self._send(404, b"not found\n", "text/plain; charset=utf-8")

            def _send(self, code: int, body: bytes, ctype: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # quiet
                return

        self._server = PooledHTTPServer(
            (self._address, self._port), Handler, self._workers, self._backlog
        )
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
