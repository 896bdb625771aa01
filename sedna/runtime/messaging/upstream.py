"""Upstream dispatch: the registry's handler of a kind, run on worker threads of that kind.

Which handler serves a kind is the runtime's `UpstreamRegistry` (shared with any
other transport); *where* it runs is decided here. Handlers are feature code that
writes to the API server (a status update is a GET and a PUT, retried on conflict),
so they must never run on the websocket loop: one slow API call would stop every
node's traffic. Each kind gets its own worker threads fed by its own queue, so a
slow or failing handler of one kind never delays another kind, and the socket
readers only ever do a non-blocking put.

Within a kind, messages are sharded over the workers by namespace/name: reports for
one object are handled in the order the LC sent them (a job's conditions are
appended in order), while different objects may proceed in parallel.

Each kind's queue is bounded: if a handler falls that far behind, further reports
for the kind are refused (and counted) instead of growing memory; the LC reports
again on its next state change.
"""

from __future__ import annotations

import contextlib
import enum
import queue
import threading
import time
import zlib

from loguru import logger

from sedna.runtime.metrics import Metrics
from sedna.runtime.upstream import UpstreamHandler, UpstreamMessage, UpstreamRegistry

DEFAULT_BACKLOG = 10_000


class Dispatch(enum.Enum):
    """What became of a report handed to the dispatcher."""

    QUEUED = "queued"
    NO_HANDLER = "no_handler"
    BACKLOG_FULL = "backlog_full"


class _KindWorkers:
    """The queues and threads of one kind."""

    def __init__(
        self, kind: str, handler: UpstreamHandler, workers: int, backlog: int, metrics: Metrics
    ) -> None:
        self.kind = kind
        self.handler = handler
        self._histogram = metrics.upstream_handler_seconds.labels(kind=kind)
        self.queues: list[queue.Queue[UpstreamMessage | None]] = [
            queue.Queue(maxsize=max(1, backlog // workers)) for _ in range(workers)
        ]
        self.threads = [
            threading.Thread(target=self._run, args=(q,), name=f"upstream-{kind}-{i}", daemon=True)
            for i, q in enumerate(self.queues)
        ]
        for t in self.threads:
            t.start()

    def offer(self, msg: UpstreamMessage) -> bool:
        if len(self.queues) == 1:
            q = self.queues[0]
        else:
            shard = zlib.crc32(f"{msg.namespace}/{msg.name}".encode()) % len(self.queues)
            q = self.queues[shard]
        try:
            q.put_nowait(msg)
        except queue.Full:
            return False
        return True

    def _run(self, q: queue.Queue[UpstreamMessage | None]) -> None:
        while True:
            msg = q.get()
            if msg is None:
                return
            start = time.perf_counter()
            try:
                self.handler(msg)
            except Exception as exc:
                # The content is not logged: it is LC data and may be large or sensitive.
                logger.opt(exception=exc).error(
                    "upstream handler for kind {} failed on a report from node {} for {}/{}: {}",
                    msg.kind,
                    msg.node_name,
                    msg.namespace,
                    msg.name,
                    exc,
                )
            finally:
                self._histogram.observe(time.perf_counter() - start)

    def stop(self, deadline: float) -> None:
        for q in self.queues:
            # Reports still waiting are handled first; a full queue loses its oldest one.
            while True:
                try:
                    q.put_nowait(None)
                    break
                except queue.Full:
                    with contextlib.suppress(queue.Empty):
                        q.get_nowait()
        for t in self.threads:
            t.join(max(0.0, deadline - time.monotonic()))
            if t.is_alive():
                logger.warning("upstream worker {} still busy at shutdown", t.name)


class UpstreamDispatcher:
    """Runs the registry's handlers off the loop; worker threads start with a kind's first report.

    Starting them lazily lets features register on the shared registry at any time,
    through the message layer or directly.
    """

    def __init__(
        self,
        registry: UpstreamRegistry,
        metrics: Metrics,
        *,
        backlog: int = DEFAULT_BACKLOG,
        workers_per_kind: int = 1,
    ) -> None:
        if workers_per_kind < 1:
            raise ValueError("workers_per_kind must be at least 1")
        self.registry = registry
        self._metrics = metrics
        self._backlog = backlog
        self._workers = workers_per_kind
        self._lock = threading.Lock()
        self._kinds: dict[str, _KindWorkers] = {}
        self._stopped = False

    def handles(self, kind: str) -> bool:
        return self.registry.handler_for(kind) is not None

    def dispatch(self, msg: UpstreamMessage) -> Dispatch:
        """Queue msg for its kind's workers without blocking."""
        workers = self._kinds.get(msg.kind)
        if workers is None:
            handler = self.registry.handler_for(msg.kind)
            if handler is None:
                return Dispatch.NO_HANDLER
            with self._lock:
                if self._stopped:
                    return Dispatch.BACKLOG_FULL
                workers = self._kinds.get(msg.kind)
                if workers is None:
                    workers = _KindWorkers(
                        msg.kind, handler, self._workers, self._backlog, self._metrics
                    )
                    self._kinds[msg.kind] = workers
        return Dispatch.QUEUED if workers.offer(msg) else Dispatch.BACKLOG_FULL

    def stop(self, timeout: float = 5.0) -> None:
        """Let the workers finish what waits, within timeout in total."""
        with self._lock:
            self._stopped = True
            kinds = list(self._kinds.values())
        deadline = time.monotonic() + timeout
        for k in kinds:
            k.stop(deadline)
