"""One Prometheus registry per runtime, and the GM's own metric families.

A registry per runtime (not the process-global default) lets several runtimes live
in one process, as tests and embedding applications need.
"""

from __future__ import annotations

from prometheus_client import (
    GC_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)

from sedna.runtime.clock import RealClock
from sedna.runtime.observability import (
    JobStateCollector,
    NodeConnectionCollector,
    StageTransitions,
)


class Metrics:
    """The metric families that span features: LC connections and messages.

    Workqueue and controller families are created on `registry` by their own modules.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.lc_connected_nodes = Gauge(
            "lc_connected_nodes", "LocalControllers connected now", registry=r
        )
        self.lc_messages_sent = Counter(
            "lc_messages_sent", "Messages written to LCs", ["kind"], registry=r
        )
        self.lc_messages_received = Counter(
            "lc_messages_received", "Messages received from LCs", ["kind"], registry=r
        )
        self.lc_messages_rejected = Counter(
            "lc_messages_rejected", "LC frames rejected", ["reason"], registry=r
        )
        from sedna.runtime.messaging.wire import Reason  # the messaging layer imports this

        for reason in Reason:  # 0, not absent, until the first rejection: dashboards show 0
            self.lc_messages_rejected.labels(reason=reason.value)
        self.lc_messages_dropped = Counter(
            "lc_messages_dropped",
            "Downstream messages dropped because a node's queue was full",
            ["kind"],
            registry=r,
        )
        self.lc_messages_forgotten = Counter(
            "lc_messages_forgotten",
            "Downstream messages dropped because their node was forgotten "
            "(reason node_deleted: its Node object was deleted; idle: disconnected and idle)",
            ["reason"],
            registry=r,
        )
        self.lc_queues_forgotten = Counter(
            "lc_queues_forgotten", "Per-node downstream queues forgotten", ["reason"], registry=r
        )
        self.lc_buffered_bytes = Gauge(
            "lc_buffered_bytes",
            "Bytes LCs sent that the GM buffers, not yet handled (websocket.maxBufferedBytes)",
            registry=r,
        )
        self.lc_queue_depth = Gauge(
            "lc_queue_depth", "Downstream messages waiting per node", ["node"], registry=r
        )
        self.upstream_handler_seconds = Histogram(
            "lc_upstream_handler_seconds", "Time spent in upstream handlers", ["kind"], registry=r
        )
        self.lc_reports_retried = Counter(
            "lc_reports_retried",
            "Accepted LC reports applied again after a transient API error",
            ["kind"],
            registry=r,
        )
        self.lc_reports_dropped = Counter(
            "lc_reports_dropped",
            "Accepted LC reports dropped, the oldest of a node whose report queue was full",
            ["kind"],
            registry=r,
        )
        self.lc_reports_stale = Counter(
            "lc_reports_stale",
            "LC reports skipped as older than the object's state (the handler's staleness hook)",
            ["kind"],
            registry=r,
        )
        self.events_emitted = Counter(
            "kube_events_emitted", "Kubernetes Events written", ["type", "reason"], registry=r
        )
        self.leader = Gauge("leader_election_is_leader", "1 while this GM leads", registry=r)
        # What every Prometheus exporter has: process_* (CPU, memory, fds) and python_*.
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        if GC_COLLECTOR is not None:
            GCCollector(registry=r)
        # Jobs by state and LC connections per node (sedna.runtime.observability).
        self.job_states = JobStateCollector(RealClock())
        r.register(self.job_states)
        self.stage_transitions = StageTransitions(r)
        self.lc_nodes = NodeConnectionCollector()
        r.register(self.lc_nodes)
