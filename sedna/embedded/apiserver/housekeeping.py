"""What keeps a long-running embedded cluster bounded, as kube's control plane does.

- Event TTL (kube-apiserver `--event-ttl`, 1 h): an Event goes once its last write is
  older than the TTL. etcd's lease restarts with every write; here the last write is
  the newest time the Event carries (lastTimestamp, eventTime, series, firstTimestamp,
  creationTimestamp, managedFields), or, for one carrying none that parses, the
  first sweep that saw its current resourceVersion.
- Terminated-pod GC (kube-controller-manager's PodGC, `--terminated-pod-gc-threshold`):
  beyond `terminated_pod_threshold` Succeeded/Failed pods the oldest (by
  creationTimestamp, then namespace and name) are deleted. Pending/Running pods and
  pods without a status are never taken; the newest ones, which controllers may still
  read, are kept.
- Orphaned pods (PodGC's `gcOrphaned`): a pod bound to a Node that has not existed
  for `orphan_quarantine` seconds is marked Failed (condition DisruptionTarget,
  reason DeletionByPodGC) unless it already terminated, then deleted.
- Container logs of pods that no longer exist (the kubelet removes a deleted pod's
  logs; files left by a pod deleted while no kubelet ran go here).

Deletions take the normal delete path (`Operations.delete`): watches see DELETED,
finalizers are honoured (the pod waits with a deletionTimestamp), dependents are
collected and the SQLite store forgets the object. Each sweep deletes at most `batch`
objects of each kind and reports whether it stopped early, so the caller comes back
sooner. A sweep reads the store in memory (one pass over Events, Pods and the log
folder); nothing is added to the write path.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .errors import APIError
from .operations import Operations
from .resources import POD_KEY

EVENT_KEYS = (("", "events"), ("events.k8s.io", "events"))
NODE_KEY = ("", "nodes")
TERMINATED = ("Succeeded", "Failed")
DEFAULT_EVENT_TTL = 3600.0
DEFAULT_TERMINATED_POD_THRESHOLD = 100
DEFAULT_ORPHAN_QUARANTINE = 40.0  # PodGC's quarantineTime
DEFAULT_BATCH = 500
DEFAULT_INTERVAL = 30.0  # seconds between sweeps of a server that runs them itself
_DELETE = {"propagationPolicy": "Background"}


@dataclass
class SweepResult:
    """What one sweep removed; `more` when a batch limit stopped it early."""

    events: int = 0
    terminated_pods: int = 0
    orphaned_pods: int = 0
    logs: int = 0
    more: bool = False


def parse_time(value: Any) -> datetime | None:
    """A metav1.Time/MicroTime string as an aware datetime, None for anything else."""
    if not isinstance(value, str) or not value:
        return None
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def event_last_write(event: Mapping[str, Any]) -> datetime | None:
    """The newest time an Event (core/v1 or events.k8s.io/v1) carries."""
    series = event.get("series")
    candidates: list[Any] = [
        event.get("lastTimestamp"),
        event.get("eventTime"),
        event.get("firstTimestamp"),
        event.get("deprecatedLastTimestamp"),
        event.get("deprecatedFirstTimestamp"),
        series.get("lastObservedTime") if isinstance(series, Mapping) else None,
        _meta(event).get("creationTimestamp"),
    ]
    managed = _meta(event).get("managedFields")
    if isinstance(managed, list):
        candidates += [m.get("time") for m in managed if isinstance(m, Mapping)]
    times = [t for t in map(parse_time, candidates) if t is not None]
    return max(times) if times else None


def _phase(pod: Mapping[str, Any]) -> str:
    status = pod.get("status")
    phase = status.get("phase") if isinstance(status, Mapping) else None
    return phase if isinstance(phase, str) else ""


def _age_key(pod: Mapping[str, Any]) -> tuple[datetime, str, str]:
    meta = _meta(pod)
    created = parse_time(meta.get("creationTimestamp")) or datetime.min.replace(tzinfo=UTC)
    return created, str(meta.get("namespace") or ""), str(meta.get("name") or "")


class Housekeeper:
    """The sweeps; every call runs on the server's loop thread (the store's)."""

    def __init__(
        self,
        ops: Operations,
        *,
        event_ttl: float = DEFAULT_EVENT_TTL,
        terminated_pod_threshold: int = DEFAULT_TERMINATED_POD_THRESHOLD,
        orphan_quarantine: float = DEFAULT_ORPHAN_QUARANTINE,
        batch: int = DEFAULT_BATCH,
        log_dir: Path | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.ops = ops
        self.store = ops.store
        self.event_ttl = event_ttl  # seconds; <= 0: Events never expire
        self.terminated_pod_threshold = terminated_pod_threshold  # <= 0: keep them all
        self.orphan_quarantine = orphan_quarantine
        self.batch = max(1, batch)
        self.log_dir = log_dir
        self.clock: Callable[[], datetime] = clock or (lambda: datetime.now(UTC))
        # Events with no time of their own: (key, ns, name) -> (resourceVersion, first seen)
        self._untimed: dict[tuple[tuple[str, str], str, str], tuple[str, datetime]] = {}
        # pod uid -> when its node was first seen missing
        self._orphan_since: dict[str, datetime] = {}

    def sweep(self, now: datetime | None = None) -> SweepResult:
        """One pass of every sweep at `now` (the clock's time when None)."""
        now = now or self.clock()
        result = SweepResult()
        self.ops.retry_unfinished()  # cascades a full disk stopped
        self._expire_events(now, result)
        self._collect_terminated(result)
        self._collect_orphans(now, result)
        self._remove_stale_logs(result)
        return result

    # -- Events ------------------------------------------------------------------------
    def _expire_events(self, now: datetime, result: SweepResult) -> None:
        if self.event_ttl <= 0:
            self._untimed.clear()
            return
        seen: set[tuple[tuple[str, str], str, str]] = set()
        for key in EVENT_KEYS:
            rt = self.ops.registry.by_key(key)
            if rt is None:
                continue
            for ev in self.store.list(key):
                meta = _meta(ev)
                ident = (key, str(meta.get("namespace") or ""), str(meta.get("name") or ""))
                written = event_last_write(ev)
                if written is None:
                    seen.add(ident)
                    rv = str(meta.get("resourceVersion") or "")
                    known = self._untimed.get(ident)
                    if known is None or known[0] != rv:
                        known = self._untimed[ident] = (rv, now)
                    written = known[1]
                if (now - written).total_seconds() < self.event_ttl:
                    continue
                if result.events >= self.batch:
                    result.more = True
                    break
                if self._delete(rt, ident[1], ident[2]):
                    result.events += 1
                    self._untimed.pop(ident, None)
                    seen.discard(ident)
        for ident in [i for i in self._untimed if i not in seen]:
            del self._untimed[ident]

    # -- pods --------------------------------------------------------------------------
    def _collect_terminated(self, result: SweepResult) -> None:
        threshold = self.terminated_pod_threshold
        rt = self.ops.registry.by_key(POD_KEY)
        if threshold <= 0 or rt is None:
            return
        done = [
            p
            for p in self.store.list(POD_KEY)
            if _phase(p) in TERMINATED and not _meta(p).get("deletionTimestamp")
        ]
        excess = len(done) - threshold
        if excess <= 0:
            return
        done.sort(key=_age_key)
        for pod in done[:excess]:
            if result.terminated_pods >= self.batch:
                result.more = True
                return
            meta = _meta(pod)
            if self._delete(rt, str(meta.get("namespace") or ""), str(meta.get("name") or "")):
                result.terminated_pods += 1

    def _collect_orphans(self, now: datetime, result: SweepResult) -> None:
        rt = self.ops.registry.by_key(POD_KEY)
        if rt is None:
            self._orphan_since.clear()
            return
        nodes = {str(_meta(n).get("name")) for n in self.store.list(NODE_KEY)}
        still: dict[str, datetime] = {}
        for pod in self.store.list(POD_KEY):
            meta = _meta(pod)
            spec = pod.get("spec")
            node = spec.get("nodeName") if isinstance(spec, Mapping) else None
            uid = str(meta.get("uid") or "")
            if not node or not isinstance(node, str) or node in nodes or not uid:
                continue
            if meta.get("deletionTimestamp"):
                continue
            since = self._orphan_since.get(uid, now)
            if (now - since).total_seconds() < self.orphan_quarantine:
                still[uid] = since
                continue
            if result.orphaned_pods >= self.batch:
                result.more = True
                still[uid] = since
                continue
            ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
            self._mark_failed(pod, node, now)
            if self._delete(rt, ns, name):
                result.orphaned_pods += 1
        self._orphan_since = still

    def _mark_failed(self, pod: Mapping[str, Any], node: str, now: datetime) -> None:
        """What PodGC writes before it deletes an orphan that has not terminated."""
        if _phase(pod) in TERMINATED:
            return
        rt = self.ops.registry.by_key(POD_KEY)
        meta = _meta(pod)
        current = self.store.get(POD_KEY, str(meta.get("namespace") or ""), str(meta.get("name")))
        if rt is None or current is None:
            return
        new = dict(current)  # its status is replaced below; the rest is shared
        status = new.get("status")
        status = new["status"] = dict(status) if isinstance(status, Mapping) else {}
        conds = status.get("conditions")
        conds = [c for c in conds if isinstance(c, Mapping)] if isinstance(conds, list) else []
        conds = [c for c in conds if c.get("type") != "DisruptionTarget"]
        conds.append(
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "DeletionByPodGC",
                "message": f"PodGC: node {node} no longer exists",
                "lastTransitionTime": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
        )
        status["conditions"] = conds
        status["phase"] = "Failed"
        with contextlib.suppress(APIError):
            self.ops.commit_update(rt, current, new, "status", internal=True)

    # -- container logs ----------------------------------------------------------------
    def _remove_stale_logs(self, result: SweepResult) -> None:
        if self.log_dir is None:
            return
        try:
            entries = os.scandir(self.log_dir)
        except OSError:
            return
        with entries:
            for entry in entries:
                parts = _log_name(entry.name)
                if parts is None or self.store.get(POD_KEY, parts[0], parts[1]) is not None:
                    continue
                if result.logs >= self.batch:
                    result.more = True
                    return
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
                    result.logs += 1

    def _delete(self, rt: Any, ns: str, name: str) -> bool:
        try:
            self.ops.delete(rt, ns or None, name, _DELETE)
        except APIError:
            return False  # gone meanwhile, or refused: the next sweep looks again
        return True


def _log_name(file: str) -> tuple[str, str, str] | None:
    """(namespace, pod, container) of a `pod_logs` file name, None for other files."""
    if not file.endswith(".log"):
        return None
    parts = file[: -len(".log")].split("_")
    if len(parts) != 3 or not all(parts):
        return None
    return parts[0], parts[1], parts[2]
