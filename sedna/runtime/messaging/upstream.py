"""Upstream dispatch: the registry's handler of a kind, run on worker threads of that kind.

Which handler serves a kind is the runtime's `UpstreamRegistry` (shared with any
other transport); *where* it runs is decided here. Handlers are feature code that
writes to the API server, so they never run on the websocket loop, and each kind
has worker threads of its own: a slow handler of one kind never delays another.

No accepted report is lost to a transient API error. Handlers run inside
`report_context`, so the runtime's status writers retry 5xx, 429 and lost answers
with backoff until the write lands or the object is gone; a transient error that
escapes a handler (a failed read) runs the handler again after a backoff. Go's GM,
and ours before, dropped the report on any error but 409.

Order and fairness: within a kind, reports are sharded over the workers by
namespace/name, so the reports for one object are handled in the order they came.
Each worker keeps one queue per node and takes from them in turn, so one node's flood
waits behind itself only. A node's queue holds at most `per_node` reports: beyond
that its oldest is dropped and counted (lc_reports_dropped). The whole kind holds at
most `backlog` reports and `max_bytes` of them, shared fairly between the nodes
(`fair_share`): when full, the node holding the most gives way (its oldest dropped
and counted), and a new report is refused (lc_messages_rejected) only when it
would take its node over its share. One node's reports, however large, cannot get
another node's refused; a single queue holding every report of the kind in bytes
could (one node sending reports of `maxFrameBytes` filled it).

A kind's staleness hook (`UpstreamRegistry.register(..., stale=...)`) is asked right
before the handler: a report older than what the object records is skipped and
counted (lc_reports_stale).
"""

from __future__ import annotations

import enum
import threading
import time
import zlib
from collections import deque

from loguru import logger

from sedna.runtime.clock import Clock, RealClock
from sedna.runtime.kube.status import REPORT_BACKOFF_INITIAL, REPORT_BACKOFF_MAX, is_transient
from sedna.runtime.messaging.fair_share import make_room, over_share
from sedna.runtime.messaging.log_limit import LogLimiter
from sedna.runtime.metrics import Metrics
from sedna.runtime.upstream import (
    UpstreamHandler,
    UpstreamMessage,
    UpstreamRegistry,
    report_context,
)

DEFAULT_BACKLOG = 10_000
DEFAULT_PER_NODE = 1_000
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
_DROP_LOG_WINDOW = 60.0


class Dispatch(enum.Enum):
    """What became of a report handed to the dispatcher."""

    QUEUED = "queued"
    NO_HANDLER = "no_handler"
    BACKLOG_FULL = "backlog_full"


class _FairQueue:
    """Per-node FIFOs served round-robin; bounded per node (drop oldest) and in total.

    The totals (reports and bytes) are shared fairly (`fair_share`): when one would be
    exceeded, the node holding the most gives way, oldest first, the newcomer's node
    counted with its new report. A node within its share is never refused nor loses a
    report because another node floods.
    """

    def __init__(self, per_node: int, total: int, max_bytes: int) -> None:
        self._per_node = max(1, per_node)
        self._total = max(1, total)
        self._max_bytes = max(1, max_bytes)
        self._bytes = 0
        self._cond = threading.Condition()
        self._nodes: dict[str, deque[UpstreamMessage]] = {}
        self._node_bytes: dict[str, int] = {}
        self._ring: deque[str] = deque()  # nodes with waiting reports, in serving order
        self._size = 0
        self.closed = False

    def put(self, msg: UpstreamMessage) -> tuple[bool, list[UpstreamMessage]]:
        """(accepted, the reports dropped to make room for it: its node's oldest beyond
        `per_node`, and those of the nodes holding the most when a total is reached)."""
        with self._cond:
            if self.closed or msg.size > self._max_bytes:
                return False, []
            node = msg.node_name
            dropped: list[UpstreamMessage] = []

            def pop_oldest(victim: str) -> int | None:
                if victim not in self._nodes:
                    return None
                popped = self._pop_locked(victim)
                if victim not in self._nodes:
                    self._ring.remove(victim)  # at most once per node emptied this way
                dropped.append(popped)
                return popped.size

            def pop_one(victim: str) -> int | None:
                return None if pop_oldest(victim) is None else 1

            q = self._nodes.get(node)
            # at its own bound the node's oldest gives way, unless the new report is refused
            oldest = q.popleft() if q is not None and len(q) >= self._per_node else None
            if oldest is not None:
                self._size -= 1
                self._bytes -= oldest.size
                self._node_bytes[node] -= oldest.size
            need_count = self._size + 1 - self._total if oldest is None else 0
            counts = {n: len(nq) for n, nq in self._nodes.items()} if need_count > 0 else {}
            need = self._bytes + msg.size - self._max_bytes
            # decide before anything is dropped: a refused report costs nobody a report
            if over_share(counts, node, 1, need_count) or over_share(
                self._node_bytes, node, msg.size, need
            ):
                if oldest is not None:  # the node keeps what it had
                    self._nodes[node].appendleft(oldest)
                    self._size += 1
                    self._bytes += oldest.size
                    self._node_bytes[node] += oldest.size
                return False, []
            if oldest is not None:
                dropped.append(oldest)
            # Within its share on both: the others over it make room. Room made for the
            # count only lowers what the others hold, so the bytes' share cannot shrink.
            make_room(counts, node, 1, need_count, pop_one)
            need = self._bytes + msg.size - self._max_bytes
            make_room(self._node_bytes, node, msg.size, need, pop_oldest)
            q = self._nodes.get(node)
            if q is None:
                q = self._nodes[node] = deque()
                self._ring.append(node)
            q.append(msg)
            self._node_bytes[node] = self._node_bytes.get(node, 0) + msg.size
            self._size += 1
            self._bytes += msg.size
            self._cond.notify()
            return True, dropped

    def _pop_locked(self, node: str) -> UpstreamMessage:
        """Take the oldest report of node (which has one); forget the node once empty."""
        q = self._nodes[node]
        msg = q.popleft()
        self._size -= 1
        self._bytes -= msg.size
        if q:
            self._node_bytes[node] -= msg.size
        else:
            del self._nodes[node]
            del self._node_bytes[node]
        return msg

    @property
    def bytes(self) -> int:
        with self._cond:
            return self._bytes

    def get(self) -> UpstreamMessage | None:
        """The next report, round-robin over nodes; None once closed and drained."""
        with self._cond:
            while not self._ring:
                if self.closed:
                    return None
                self._cond.wait()
            node = self._ring.popleft()
            msg = self._pop_locked(node)
            if node in self._nodes:
                self._ring.append(node)
            return msg

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return self._size


class _KindWorkers:
    """The queues and threads of one kind."""

    def __init__(
        self,
        kind: str,
        handler: UpstreamHandler,
        registry: UpstreamRegistry,
        workers: int,
        backlog: int,
        per_node: int,
        max_bytes: int,
        metrics: Metrics,
        clock: Clock,
        stop: threading.Event,
    ) -> None:
        self.kind = kind
        self.handler = handler
        self._registry = registry
        self._clock = clock
        self._stop = stop
        self._sleep_cond = threading.Condition()
        self._histogram = metrics.upstream_handler_seconds.labels(kind=kind)
        self._retried = metrics.lc_reports_retried.labels(kind=kind)
        self._dropped = metrics.lc_reports_dropped.labels(kind=kind)
        self._stale = metrics.lc_reports_stale.labels(kind=kind)
        self._drop_log = LogLimiter(burst=5, window=_DROP_LOG_WINDOW)
        self.queues = [
            _FairQueue(per_node, max(1, backlog // workers), max(1, max_bytes // workers))
            for _ in range(workers)
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
        accepted, dropped = q.put(msg)
        for old in dropped:
            self._dropped.inc()
            # counted one by one, logged a few times per node and minute: a flood would
            # otherwise cost a line per report
            admitted, suppressed = self._drop_log.admit(old.node_name, "dropped")
            if suppressed:
                logger.warning(
                    "reports of node {} for kind {}: {} more dropped in the last {:.0f} s, "
                    "not logged (lc_reports_dropped_total counts them all)",
                    old.node_name,
                    self.kind,
                    suppressed,
                    _DROP_LOG_WINDOW,
                )
            if admitted:
                logger.warning(
                    "reports of node {} for kind {} pile up: dropped its oldest, for {}/{}",
                    old.node_name,
                    self.kind,
                    old.namespace,
                    old.name,
                )
        return accepted

    def wake(self) -> None:
        with self._sleep_cond:
            self._sleep_cond.notify_all()

    def _sleep(self, seconds: float) -> None:
        with self._sleep_cond:
            if not self._stop.is_set():
                self._clock.condition_wait(self._sleep_cond, seconds)

    def _run(self, q: _FairQueue) -> None:
        with report_context(self._sleep, self._stop.is_set):
            while True:
                msg = q.get()
                if msg is None:
                    return
                self._apply(msg)

    def _apply(self, msg: UpstreamMessage) -> None:
        delay = REPORT_BACKOFF_INITIAL
        while True:
            start = time.perf_counter()
            try:
                stale = self._registry.staleness_hook(msg.kind)
                if stale is not None and stale(msg):
                    self._stale.inc()
                    logger.info(
                        "skipped a stale {} report from node {} for {}/{}",
                        msg.kind,
                        msg.node_name,
                        msg.namespace,
                        msg.name,
                    )
                    return
                self.handler(msg)
                return
            except Exception as exc:
                if is_transient(exc) and not self._stop.is_set():
                    self._retried.inc()
                    logger.info(
                        "{} report from node {} for {}/{}: {}; again in {:.1f} s",
                        msg.kind,
                        msg.node_name,
                        msg.namespace,
                        msg.name,
                        exc,
                        delay,
                    )
                    self._sleep(delay)
                    delay = min(delay * 2, REPORT_BACKOFF_MAX)
                    continue
                # The content is not logged: it is LC data and may be large or sensitive.
                logger.opt(exception=exc).error(
                    "upstream handler for kind {} failed on a report from node {} for {}/{}: {}",
                    msg.kind,
                    msg.node_name,
                    msg.namespace,
                    msg.name,
                    exc,
                )
                return
            finally:
                self._histogram.observe(time.perf_counter() - start)

    def stop(self, deadline: float) -> None:
        for q in self.queues:
            q.close()  # reports still waiting are handled first
        self.wake()
        for t in self.threads:
            t.join(max(0.0, deadline - time.monotonic()))
            if t.is_alive():
                logger.warning("upstream worker {} still busy at shutdown", t.name)


class UpstreamDispatcher:
    """Runs the registry's handlers off the loop; worker threads start with a kind's first report.

    Starting them lazily lets features register on the shared registry at any time,
    through the message layer or directly. `clock` times the retry backoff.
    """

    def __init__(
        self,
        registry: UpstreamRegistry,
        metrics: Metrics,
        *,
        backlog: int = DEFAULT_BACKLOG,
        per_node: int = DEFAULT_PER_NODE,
        max_bytes: int = DEFAULT_MAX_BYTES,
        workers_per_kind: int = 1,
        clock: Clock | None = None,
    ) -> None:
        if workers_per_kind < 1:
            raise ValueError("workers_per_kind must be at least 1")
        self.registry = registry
        self._metrics = metrics
        self._backlog = backlog
        self._per_node = per_node
        self._max_bytes = max_bytes
        self._workers = workers_per_kind
        self._clock: Clock = clock if clock is not None else RealClock()
        self._lock = threading.Lock()
        self._kinds: dict[str, _KindWorkers] = {}
        self._stopped = False
        self._stop_event = threading.Event()

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
                        msg.kind,
                        handler,
                        self.registry,
                        self._workers,
                        self._backlog,
                        self._per_node,
                        self._max_bytes,
                        self._metrics,
                        self._clock,
                        self._stop_event,
                    )
                    self._kinds[msg.kind] = workers
        return Dispatch.QUEUED if workers.offer(msg) else Dispatch.BACKLOG_FULL

    def pending(self) -> int:
        """Reports accepted and not yet handled, over every kind."""
        with self._lock:
            kinds = list(self._kinds.values())
        return sum(len(q) for k in kinds for q in k.queues)

    def stop(self, timeout: float = 5.0) -> None:
        """Let the workers finish what waits, within timeout in total; retries end at once."""
        with self._lock:
            self._stopped = True
            kinds = list(self._kinds.values())
        deadline = time.monotonic() + timeout
        # Waiting reports are still applied once each, but a retry loop gives up now.
        self._stop_event.set()
        for k in kinds:
            k.stop(deadline)
