"""The status reports Sedna's serving workers send through their LC, checked once.

FeatureExtractionService, ReidJob and VideoAnalyticsJob workers (and the joint
inference workers) post ``{"phase", "status", "output": {"ownerInfo": {...}}}`` to
``LC_SERVER``; the LC forwards it to the GM under the owner's kind. Sedna's Go
controllers unmarshal it, drop ``startTime``/``updateTime`` and then (ReID,
VideoAnalytics) drop the rest too; here a feature gets the checked owner info and a
`WorkerReportError` naming the field for anything else, and `worker_on_node` tells whether
the reporting LC's node runs one of the owner's workers (the only LC that may report).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC
from typing import Any

from loguru import logger

from sedna.runtime.context import ControllerContext
from sedna.runtime.informers import SharedInformer
from sedna.runtime.kube import ApiError, NotFound, Resource
from sedna.runtime.kube.status import is_transient, update_status_with_retry
from sedna.runtime.log_safety import clip
from sedna.runtime.messaging.log_limit import LogLimiter
from sedna.runtime.upstream import UpstreamMessage, in_report
from sedna.runtime.workers.helpers import convert_map_to_metrics
from sedna.runtime.workers.labels import generate_labels, job_ref

__all__ = [
    "MAX_CONDITION_DATA",
    "MAX_OWNER_INFO_KEYS",
    "REASON_INVALID_REPORT",
    "OwnerInfoReport",
    "WorkerReportError",
    "WorkerReports",
    "parse_owner_info_report",
    "record_in_latest_condition",
    "record_metrics",
    "worker_on_node",
]

MAX_OWNER_INFO_KEYS = 64
REASON_INVALID_REPORT = "InvalidReport"
_IGNORED_TIME_KEYS = ("startTime", "updateTime")


class WorkerReportError(ValueError):
    """The report is wrong at `field` (``content.output.ownerInfo``)."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


@dataclass(frozen=True)
class OwnerInfoReport:
    """A checked report: ``owner_info`` without the time keys; None when it had none."""

    phase: str
    status: str
    owner_info: Mapping[str, Any] | None


def _optional_str(content: Mapping[str, Any], key: str) -> str:
    value = content.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise WorkerReportError(f"content.{key}", f"expected a string, got {type(value).__name__}")
    return value


def parse_owner_info_report(content: Any) -> OwnerInfoReport:
    """Check a worker report; at most `MAX_OWNER_INFO_KEYS` owner-info keys."""
    if not isinstance(content, Mapping):
        raise WorkerReportError("content", "expected an object")
    phase = _optional_str(content, "phase")
    status = _optional_str(content, "status")
    output = content.get("output")
    if output is None:
        return OwnerInfoReport(phase, status, None)
    if not isinstance(output, Mapping):
        raise WorkerReportError("content.output", "expected an object")
    info = output.get("ownerInfo")
    if info is None:
        return OwnerInfoReport(phase, status, None)
    if not isinstance(info, Mapping):
        raise WorkerReportError("content.output.ownerInfo", "expected an object")
    kept = {str(k): v for k, v in info.items() if k not in _IGNORED_TIME_KEYS}
    if len(kept) > MAX_OWNER_INFO_KEYS:
        raise WorkerReportError(
            "content.output.ownerInfo", f"{len(kept)} keys, at most {MAX_OWNER_INFO_KEYS}"
        )
    return OwnerInfoReport(phase, status, kept)


def worker_on_node(owner: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], node: str) -> bool:
    """Whether one of `pods` is a worker of `owner` (by Sedna's labels) bound to `node`.

    Pods of the owner's Deployments carry the owner's labels too, so this holds for
    Deployment workers as for bare ones.
    """
    labels = generate_labels(job_ref(owner))
    for pod in pods:
        have = (pod.get("metadata") or {}).get("labels") or {}
        mine = all(have.get(k) == v for k, v in labels.items())
        if mine and (pod.get("spec") or {}).get("nodeName") == node:
            return True
    return False


MAX_CONDITION_DATA = 8192


def record_metrics(status: dict[str, Any], report: OwnerInfoReport, now: str) -> bool:
    """``status.metrics`` from the owner info (FeatureExtractionService, as Sedna does)."""
    metrics = convert_map_to_metrics(report.owner_info or {})
    if status.get("metrics") == metrics:
        return False
    status["metrics"] = metrics
    return True


RUNNING_CONDITION = "Running"
REASON_WORKER_RUNNING = "WorkerRunning"
"""The reason of a job-style kind's ``Running`` condition (it has one only to hold a
report, or over a ``Pending`` it left)."""


def record_in_latest_condition(status: dict[str, Any], report: OwnerInfoReport, now: str) -> bool:
    """The owner info as JSON in the ``data`` of the latest condition (ReidJob, VideoAnalyticsJob).

    Sedna parses these reports and drops them; their CRDs have no metrics but each
    condition has ``data`` ("the json data related to this condition"), as the staged
    jobs use it. One string per condition, at most `MAX_CONDITION_DATA` bytes, so the
    status stays bounded however often workers report. A running job has no condition
    (as in Sedna, whose jobs only get ``Completed`` or ``Failed``), so the first report
    appends ``Running`` (reason ``WorkerRunning``) to hold it. Raises
    `WorkerReportError` for a report too large; False when nothing changed.
    """
    raw = status.get("conditions")
    conds = [c for c in raw if isinstance(c, Mapping)] if isinstance(raw, list) else []
    data = json.dumps(report.owner_info or {}, sort_keys=True, separators=(",", ":"))
    if len(data.encode()) > MAX_CONDITION_DATA:
        raise WorkerReportError(
            "content.output.ownerInfo", f"more than {MAX_CONDITION_DATA} bytes of JSON"
        )
    if not conds:
        status["conditions"] = [
            {
                "type": RUNNING_CONDITION,
                "status": "True",
                "reason": REASON_WORKER_RUNNING,
                "lastHeartbeatTime": now,
                "lastTransitionTime": now,
                "data": data,
            }
        ]
        return True
    if conds[-1].get("data") == data:
        return False
    latest = dict(conds[-1])
    latest["data"] = data
    latest["lastHeartbeatTime"] = now
    status["conditions"] = [*conds[:-1], latest]
    return True


ApplyReport = Callable[[dict[str, Any], OwnerInfoReport, str], bool]


class WorkerReports:
    """The upstream handler of one kind whose workers report ``ownerInfo`` through the LC.

    A report is taken only as operation ``status``, for an owner that exists, from the
    LC of a node where one of the owner's workers runs, and when it parses; anything
    else is logged with node, kind and name (a bad payload also gets a Warning Event
    naming the field) and nothing is written. `apply` then changes the status (a copy)
    and says whether it did; the write retries on conflicts.
    """

    def __init__(
        self,
        ctx: ControllerContext,
        resource: Resource,
        owners: SharedInformer,
        pods: SharedInformer,
        apply: ApplyReport,
    ) -> None:
        self.ctx = ctx
        self.resource = resource
        self.owners = owners
        self.pods = pods
        self.apply = apply
        self.api = ctx.kube.resource(resource)
        # the node is authorized here, by the pods bound to it (`worker_on_node`)
        ctx.upstream.register(resource.kind, self.handle, node_checked=True)
        # ignored or invalid reports: at most 10 lines a minute per kind of line over all
        # nodes, so a node that floods them (or names it made up) costs a few lines
        self._log = LogLimiter(burst=10, window=60.0)

    def _warn(self, what: str, text: str, *args: Any) -> None:
        admitted, suppressed = self._log.admit("(reports)", what)
        if suppressed:
            logger.warning(
                "{} more {} report(s) ignored ({}) in the last minute",
                suppressed,
                self.resource.kind,
                what,
            )
        if admitted:
            logger.warning(text, *args)

    def handle(self, msg: UpstreamMessage) -> None:
        kind = self.resource.kind
        where = (
            f"report from node {clip(msg.node_name)} for {kind} "
            f"{clip(msg.namespace)}/{clip(msg.name)}"
        )
        if msg.operation != "status":
            self._warn(
                "operation", "{}: operation {!r} ignored (only status)", where, clip(msg.operation)
            )
            return
        try:
            cached = self.owners.get_or_read(msg.namespace, msg.name)
        except ApiError as exc:
            if is_transient(exc) and in_report():
                raise  # the message layer applies the report again after a backoff
            logger.error("{}: cannot read it: {}", where, exc)
            return
        if cached is None:
            self._warn("no_object", "{}: no such object, report ignored", where)
            return
        owner = {**cached, "kind": kind, "apiVersion": self.resource.api_version}
        pods = self.pods.lister.list(msg.namespace, generate_labels(job_ref(owner)))
        if not worker_on_node(owner, pods, msg.node_name):
            self._warn(
                "not_on_node", "{}: none of its workers runs on that node, report ignored", where
            )
            return
        try:
            report = parse_owner_info_report(msg.content)
        except WorkerReportError as exc:
            self._invalid(owner, where, msg.node_name, exc)
            return
        if report.owner_info is None:
            logger.debug("{}: no output.ownerInfo, nothing to record", where)
            return
        now = self.ctx.clock.wall().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        rejected: list[WorkerReportError] = []

        def mutate(fresh: dict[str, Any]) -> bool:
            status = dict(fresh.get("status") or {})
            try:
                changed = self.apply(status, report, now)
            except WorkerReportError as exc:
                rejected.append(exc)
                return False
            if changed:
                fresh["status"] = status
            return changed

        try:
            update_status_with_retry(self.api, msg.namespace, msg.name, mutate, current=cached)
        except NotFound:
            logger.warning("{}: deleted meanwhile, report dropped", where)
        except ApiError as exc:
            logger.error("{}: cannot write the reported status: {}", where, exc)
        if rejected:
            self._invalid(owner, where, msg.node_name, rejected[0])

    def _invalid(
        self, owner: Mapping[str, Any], where: str, node: str, exc: WorkerReportError
    ) -> None:
        self._warn(
            "invalid", "{}: invalid report: {}: {}", where, clip(exc.field), clip(exc.reason, 200)
        )
        self.ctx.events.warning(
            owner,
            REASON_INVALID_REPORT,
            f"LC on node {clip(node)} sent an invalid report: {clip(exc.field)}: "
            f"{clip(exc.reason, 200)}",
        )
