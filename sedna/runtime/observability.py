"""What an operator watches on a real cluster, for any feature: jobs by state, stage
transitions and durations, LC connections per node.

Feature-agnostic: the job gauges are a Prometheus collector over the informer caches of
the enabled features' kinds (the latest condition's stage and type, or `status.phase`),
read at scrape time; transitions and the time spent in a stage come from an informer
update handler that sees the latest condition change. No feature code is involved, so
a third-party feature's kinds are counted as the first-party ones are.

Label values are bounded: kinds are the enabled features', stages and condition types
are cut to what the API allows a short string to be (`_label`), and the node series
cover only nodes the cluster knows (a Node object), so a client claiming made-up node
names adds no series.
"""

from __future__ import annotations

import threading
from collections import Counter as Tally
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from sedna.runtime.clock import Clock
from sedna.runtime.informers import ResourceEventHandlerFuncs, SharedInformer

Obj = Mapping[str, Any]

STAGE_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 3 * 3600, 6 * 3600, 24 * 3600)
_MAX_LABEL = 63


def _label(value: Any) -> str:
    return str(value or "")[:_MAX_LABEL]


def latest_condition(obj: Obj) -> Mapping[str, Any]:
    conditions = (obj.get("status") or {}).get("conditions") or []
    last = conditions[-1] if isinstance(conditions, list) and conditions else {}
    return last if isinstance(last, Mapping) else {}


def job_state(obj: Obj) -> tuple[str, str, str]:
    """(stage, condition type, phase) of a job, "" where the kind has none."""
    cond = latest_condition(obj)
    phase = (obj.get("status") or {}).get("phase")
    return _label(cond.get("stage")), _label(cond.get("type")), _label(phase)


def _time(cond: Mapping[str, Any]) -> float | None:
    raw = cond.get("lastTransitionTime") or cond.get("lastHeartbeatTime")
    if not isinstance(raw, str) or not raw:
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def stage_started(obj: Obj) -> float | None:
    """When the current stage began: the first condition of the latest run of that stage."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    if not isinstance(conditions, list) or not conditions:
        return None
    stage = latest_condition(obj).get("stage")
    start: Mapping[str, Any] | None = None
    for cond in reversed(conditions):
        if not isinstance(cond, Mapping) or cond.get("stage") != stage:
            break
        start = cond
    return _time(start) if start is not None else None


class JobStateCollector(Collector):
    """`sedna_jobs{kind,stage,condition,phase}` and the oldest job per stage, at scrape time."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._sources: list[tuple[str, str, SharedInformer]] = []

    def track(self, feature: str, informer: SharedInformer) -> None:
        with self._lock:
            self._sources.append((feature, informer.resource.kind, informer))

    def clear(self) -> None:
        """Forget the informers (the features stopped; a new leader term tracks anew)."""
        with self._lock:
            self._sources = []

    def collect(self) -> Iterator[GaugeMetricFamily]:
        jobs = GaugeMetricFamily(
            "sedna_jobs",
            "Sedna objects by the latest condition's stage and type, or status.phase",
            labels=["feature", "kind", "stage", "condition", "phase"],
        )
        oldest = GaugeMetricFamily(
            "sedna_job_stage_oldest_seconds",
            "How long the job longest in its current stage has been there, per stage",
            labels=["feature", "kind", "stage"],
        )
        now = self.clock.wall().timestamp()
        with self._lock:
            sources = list(self._sources)
        for feature, kind, informer in sources:
            counts: Tally[tuple[str, str, str]] = Tally()
            ages: dict[str, float] = {}
            for obj in informer.lister.list():
                state = job_state(obj)
                counts[state] += 1
                started = stage_started(obj)
                if state[0] and started is not None:
                    ages[state[0]] = max(ages.get(state[0], 0.0), max(0.0, now - started))
            for (stage, condition, phase), n in sorted(counts.items()):
                jobs.add_metric([feature, kind, stage, condition, phase], n)
            for stage, age in sorted(ages.items()):
                oldest.add_metric([feature, kind, stage], age)
        yield jobs
        yield oldest


class StageTransitions:
    """Counts changes of a job's latest condition and times the stage it leaves."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.transitions = Counter(
            "sedna_job_stage_transitions",
            "Changes of a job's latest condition, by the stage and type it moved to",
            ["kind", "stage", "condition"],
            registry=registry,
        )
        self.durations = Histogram(
            "sedna_job_stage_duration_seconds",
            "Time a job spent in a stage, observed when it moves to the next stage",
            ["kind", "stage"],
            buckets=STAGE_BUCKETS,
            registry=registry,
        )

    def on_update(self, kind: str, old: Obj, new: Obj) -> None:
        before, after = latest_condition(old), latest_condition(new)
        key_before = (before.get("stage"), before.get("type"))
        key_after = (after.get("stage"), after.get("type"))
        if not after or key_before == key_after:
            return
        self.transitions.labels(kind, _label(after.get("stage")), _label(after.get("type"))).inc()
        if before and before.get("stage") != after.get("stage"):
            started, ended = stage_started(old), _time(after)
            if started is not None and ended is not None and ended >= started:
                self.durations.labels(kind, _label(before.get("stage"))).observe(ended - started)

    def watch(self, informer: SharedInformer) -> None:
        kind = informer.resource.kind
        informer.add_event_handler(
            ResourceEventHandlerFuncs(update=lambda old, new: self.on_update(kind, old, new))
        )


class NodeConnectionCollector(Collector):
    """`lc_node_connected{node}`: 1 while the node's LC is connected, 0 once it has gone.

    Only nodes with a Node object get a series; a node's series lasts while its Node
    does, so an LC that disconnects shows as 0 (what the alert looks for) instead of
    vanishing.
    """

    def __init__(self) -> None:
        self._connected: Callable[[], Iterable[str]] = tuple
        self._known: Callable[[], Iterable[str]] = tuple
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def bind(
        self, connected: Callable[[], Iterable[str]], known: Callable[[], Iterable[str]]
    ) -> None:
        """Read the connected LCs and the known node names from these, from now on."""
        with self._lock:
            self._connected, self._known, self._seen = connected, known, set()

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "lc_node_connected", "1 while the node's LC is connected", labels=["node"]
        )
        with self._lock:
            connected, known_nodes = self._connected, self._known
        known = set(known_nodes())
        now = set(connected()) & known
        with self._lock:
            self._seen = (self._seen | now) & known
            seen = sorted(self._seen)
        for node in seen:
            family.add_metric([node], 1.0 if node in now else 0.0)
        yield family


def informers_of(informers: Sequence[SharedInformer], kinds: Iterable[str]) -> list[SharedInformer]:
    """The full (not metadata-only) informers that serve these kinds, one per kind."""
    wanted, found = set(kinds), {}
    for informer in informers:
        kind = informer.resource.kind
        if kind in wanted and kind not in found and not informer.metadata_only:
            found[kind] = informer
    return list(found.values())
