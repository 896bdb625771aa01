"""Where a controller's CPU goes per job: API requests versus the sync's own Python.

Installed in the controller's process only (bench code; nothing in ``sedna`` knows of
it). Two wrappers measure thread CPU (``time.thread_time``, so waits for the server
or the GIL do not count):

* ``KubeClient.request``: every API request, grouped by method (``/status`` apart);
* ``Controller._process``: every sync, minus the requests it made, grouped by
  whether it wrote (``sync-with-writes``) or found nothing to do (``sync-no-op``).

Thread-local totals, so concurrent workers do not charge each other. The figures
include the wrappers' own cost (about 1 µs per call).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

_local = threading.local()
_lock = threading.Lock()
_totals: dict[str, list[float]] = {}  # name -> [calls, cpu seconds]


def _add(name: str, seconds: float) -> None:
    with _lock:
        entry = _totals.setdefault(name, [0, 0.0])
        entry[0] += 1
        entry[1] += seconds


def _request_cpu() -> tuple[int, float]:
    return getattr(_local, "calls", 0), getattr(_local, "cpu", 0.0)


def install() -> None:
    """Wrap the request and sync entry points (idempotent)."""
    from sedna.runtime.controller import Controller
    from sedna.runtime.kube.client import KubeClient

    if getattr(KubeClient.request, "_breakdown", False):
        return
    request: Callable[..., Any] = KubeClient.request
    process: Callable[..., Any] = Controller._process

    def timed_request(self: Any, method: str, path: str, **kw: Any) -> Any:
        t0 = time.thread_time()
        try:
            return request(self, method, path, **kw)
        finally:
            spent = time.thread_time() - t0
            _local.calls = getattr(_local, "calls", 0) + 1
            _local.cpu = getattr(_local, "cpu", 0.0) + spent
            _add(f"request {method}{' status' if path.endswith('/status') else ''}", spent)

    def timed_process(self: Any, key: str) -> None:
        calls0, cpu0 = _request_cpu()
        t0 = time.thread_time()
        try:
            process(self, key)
        finally:
            calls1, cpu1 = _request_cpu()
            own = time.thread_time() - t0 - (cpu1 - cpu0)
            _add("sync-with-writes" if calls1 > calls0 else "sync-no-op", own)

    timed_request._breakdown = True  # type: ignore[attr-defined]
    KubeClient.request = timed_request  # type: ignore[method-assign]
    Controller._process = timed_process  # type: ignore[method-assign]


def reset() -> None:
    with _lock:
        _totals.clear()


def snapshot() -> dict[str, tuple[int, float]]:
    """name -> (calls, CPU seconds) since the last ``reset``."""
    with _lock:
        return {name: (int(n), cpu) for name, (n, cpu) in _totals.items()}
