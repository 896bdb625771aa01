"""Server-side printing: ``meta.k8s.io`` Tables, as kube-apiserver answers ``kubectl get``.

kubectl asks for ``application/json;as=Table;v=v1;g=meta.k8s.io`` (then v1beta1, then
plain JSON) and prints whatever columns the server sends; without Tables it falls back
to NAME and AGE for every kind, so ``kubectl get pods`` would hide STATUS. The columns
and cells here follow kube's printers (``pkg/printers/internalversion``) for the kinds
the GM and its users look at; custom resources use the CRD's
``additionalPrinterColumns`` as the apiextensions server does (NAME first; a lone AGE
when the CRD defines none, which is the case for all of Sedna's CRDs).

As kube does, the server always generates the wide (priority 1) columns; kubectl shows
them only with ``-o wide``. Kinds without a printer here get NAME and AGE.

Watches with a Table Accept header (``kubectl get -w``) get one-row Tables as event
objects, the column definitions only in the first, as kube sends them (``handlers``).
Bookmarks and ERROR events stay plain, and the CRD's columns are read once per watch.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import orjson

from . import errors
from .negotiation import META_GROUP
from .resources import ResourceType

TABLE_GROUP = META_GROUP
INCLUDE_OBJECT = ("None", "Metadata", "Object")

_NAME_DESC = (
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
_AGE_DESC = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)

Column = dict[str, Any]
Cells = list[Any]
Printer = Callable[[Mapping[str, Any], datetime], tuple[Cells, list[dict[str, str]] | None]]


# ---- content type (``negotiation`` picks the Table range of the Accept header) --------
def content_type(version: str) -> str:
    """The Content-Type kube-apiserver answers a Table with."""
    return f"application/json;as=Table;v={version};g={TABLE_GROUP}"


# ---- ages ------------------------------------------------------------------------------
def human_duration(seconds: float) -> str:
    """kube's ``duration.HumanDuration``: 5s, 3m20s, 15m, 5h3m, 2d4h, 400d, 3y20d."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def age(value: Any, now: datetime) -> str:
    """kube's ``translateTimestampSince``: ``<unknown>`` for a missing timestamp."""
    t = _parse_time(value)
    if t is None:
        return "<unknown>"
    return human_duration((now - t).total_seconds())


# ---- column helpers --------------------------------------------------------------------
def _col(name: str, desc: str = "", *, typ: str = "string", fmt: str = "", prio: int = 0) -> Column:
    return {"name": name, "type": typ, "format": fmt, "description": desc, "priority": prio}


NAME_COLUMN = _col("Name", _NAME_DESC, fmt="name")
AGE_COLUMN = _col("Age", _AGE_DESC)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, Mapping) else {}


def _d(obj: Mapping[str, Any] | None, *path: str) -> Any:
    """Nested lookup that tolerates missing or wrongly typed levels."""
    cur: Any = obj
    for p in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(p)
    return cur


def _lst(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _count(value: Any) -> int:
    """The keys of a map field; a stored object of another shape counts none."""
    return len(value) if isinstance(value, Mapping) else 0


def _name_age(obj: Mapping[str, Any], now: datetime) -> tuple[str, str]:
    m = _meta(obj)
    return str(m.get("name", "")), age(m.get("creationTimestamp"), now)


def _format_labels(labels: Any) -> str:
    if not isinstance(labels, Mapping) or not labels:
        return "<none>"
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def _selector_string(sel: Any) -> str:
    """``metav1.LabelSelectorAsSelector(...).String()`` (empty selector: empty string)."""
    if not isinstance(sel, Mapping):
        return ""
    parts: list[tuple[str, str]] = []
    for k, v in (sel.get("matchLabels") or {}).items():
        parts.append((k, f"{k}={v}"))
    for e in _lst(sel.get("matchExpressions")):
        key, op, vals = str(e.get("key", "")), e.get("operator"), sorted(e.get("values") or [])
        if op == "In":
            parts.append((key, f"{key} in ({','.join(vals)})"))
        elif op == "NotIn":
            parts.append((key, f"{key} notin ({','.join(vals)})"))
        elif op == "Exists":
            parts.append((key, key))
        elif op == "DoesNotExist":
            parts.append((key, f"!{key}"))
    return ",".join(p for _, p in sorted(parts))


# ---- built-in printers -----------------------------------------------------------------
POD_COLUMNS = [
    NAME_COLUMN,
    _col("Ready", "The aggregate readiness state of this pod for accepting traffic."),
    _col("Status", "The aggregate status of the containers in this pod."),
    _col(
        "Restarts",
        "The number of times the containers in this pod have been restarted and when the "
        "last container in this pod has restarted.",
    ),
    AGE_COLUMN,
    _col("IP", "IP address allocated to the pod. Routable at least within the cluster.", prio=1),
    _col("Node", "NodeName indicates in which node this pod is scheduled.", prio=1),
    _col("Nominated Node", "nominatedNodeName is set when this pod preempts other pods.", prio=1),
    _col("Readiness Gates", "If specified, all readiness gates will be evaluated.", prio=1),
]
_POD_SUCCEEDED = [
    {
        "type": "Completed",
        "status": "True",
        "reason": "Succeeded",
        "message": "The pod has completed successfully.",
    }
]
_POD_FAILED = [
    {"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}
]


def _cond_true(conds: Any, typ: str) -> bool:
    return any(c.get("type") == typ and c.get("status") == "True" for c in _lst(conds))


def _later(a: datetime | None, b: Any) -> datetime | None:
    t = _parse_time(b)
    if t is None:
        return a
    return t if a is None or t > a else a


def _terminated_reason(term: Mapping[str, Any], prefix: str) -> str:
    if term.get("reason"):
        return f"{prefix}{term['reason']}"
    if term.get("signal"):
        return f"{prefix}Signal:{term['signal']}"
    return f"{prefix}ExitCode:{term.get('exitCode', 0)}"


def print_pod(pod: Mapping[str, Any], now: datetime) -> tuple[Cells, list[dict[str, str]] | None]:
    """kube's ``printPod``: READY n/m, STATUS from phase, reason and container states."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    containers = _lst(spec.get("containers"))
    init_specs = {c.get("name"): c for c in _lst(spec.get("initContainers"))}
    restartable = {n for n, c in init_specs.items() if c.get("restartPolicy") == "Always"}
    total = len(containers) + len(restartable)
    ready = restarts = sidecar_restarts = 0
    last_restart: datetime | None = None
    last_sidecar_restart: datetime | None = None
    phase = str(status.get("phase") or "")
    reason = str(status.get("reason") or phase)
    for c in _lst(status.get("conditions")):
        if c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    conditions = (
        _POD_SUCCEEDED if phase == "Succeeded" else _POD_FAILED if phase == "Failed" else None
    )

    initializing = False
    init_statuses = _lst(status.get("initContainerStatuses"))
    for i, cs in enumerate(init_statuses):
        restarts += int(cs.get("restartCount") or 0)
        finished = _d(cs, "lastState", "terminated", "finishedAt")
        last_restart = _later(last_restart, finished)
        is_sidecar = cs.get("name") in restartable
        if is_sidecar:
            sidecar_restarts += int(cs.get("restartCount") or 0)
            last_sidecar_restart = _later(last_sidecar_restart, finished)
        state = cs.get("state") or {}
        term, waiting = state.get("terminated"), state.get("waiting")
        if term is not None and term.get("exitCode", 0) == 0:
            continue
        if is_sidecar and cs.get("started"):
            ready += 1 if cs.get("ready") else 0
            continue
        if term is not None:
            reason = _terminated_reason(term, "Init:")
        elif waiting is not None and waiting.get("reason") not in (None, "", "PodInitializing"):
            reason = f"Init:{waiting['reason']}"
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break

    if not initializing or _cond_true(status.get("conditions"), "Initialized"):
        restarts, last_restart = sidecar_restarts, last_sidecar_restart
        has_running = False
        for cs in reversed(_lst(status.get("containerStatuses"))):
            restarts += int(cs.get("restartCount") or 0)
            last_restart = _later(last_restart, _d(cs, "lastState", "terminated", "finishedAt"))
            state = cs.get("state") or {}
            waiting, term = state.get("waiting"), state.get("terminated")
            if waiting is not None and waiting.get("reason"):
                reason = str(waiting["reason"])
            elif term is not None:
                reason = _terminated_reason(term, "")
            elif cs.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            reason = "Running" if _cond_true(status.get("conditions"), "Ready") else "NotReady"

    meta = _meta(pod)
    if meta.get("deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            reason = "Terminating"

    restarts_s = str(restarts)
    if restarts and last_restart is not None:
        restarts_s = f"{restarts} ({human_duration((now - last_restart).total_seconds())} ago)"

    ips = _lst(status.get("podIPs"))
    ip = (ips[0].get("ip") if ips else status.get("podIP")) or "<none>"
    gates = _lst(spec.get("readinessGates"))
    gates_s = "<none>"
    if gates:
        conds = {c.get("type"): c.get("status") for c in _lst(status.get("conditions"))}
        ok = sum(1 for g in gates if conds.get(g.get("conditionType")) == "True")
        gates_s = f"{ok}/{len(gates)}"
    name, age_s = _name_age(pod, now)
    cells: Cells = [
        name,
        f"{ready}/{total}",
        reason,
        restarts_s,
        age_s,
        ip,
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        gates_s,
    ]
    return cells, conditions


NODE_COLUMNS = [
    NAME_COLUMN,
    _col("Status", "The status of the node"),
    _col("Roles", "The roles of the node"),
    AGE_COLUMN,
    _col("Version", "Kubelet Version reported by the node."),
    _col("Internal-IP", "List of addresses reachable to the node.", prio=1),
    _col("External-IP", "List of addresses reachable to the node.", prio=1),
    _col("OS-Image", "OS Image reported by the node from /etc/os-release.", prio=1),
    _col("Kernel-Version", "Kernel Version reported by the node.", prio=1),
    _col("Container-Runtime", "Container Runtime Version reported by the node.", prio=1),
]
_ROLE_PREFIX = "node-role.kubernetes.io/"


def _node_address(node: Mapping[str, Any], typ: str) -> str:
    for a in _lst(_d(node, "status", "addresses")):
        if a.get("type") == typ:
            return str(a.get("address", ""))
    return "<none>"


def print_node(node: Mapping[str, Any], now: datetime) -> tuple[Cells, None]:
    """kube's ``printNode``: Ready/NotReady, SchedulingDisabled, roles from labels."""
    states = []
    for c in _lst(_d(node, "status", "conditions")):
        if c.get("type") == "Ready":
            states = ["Ready" if c.get("status") == "True" else "NotReady"]
    if not states:
        states = ["Unknown"]
    if _d(node, "spec", "unschedulable"):
        states.append("SchedulingDisabled")
    roles: set[str] = set()
    for k, v in (_meta(node).get("labels") or {}).items():
        if k.startswith(_ROLE_PREFIX) and k[len(_ROLE_PREFIX) :]:
            roles.add(k[len(_ROLE_PREFIX) :])
        elif k == "kubernetes.io/role" and v:
            roles.add(str(v))
    info = _d(node, "status", "nodeInfo") or {}
    name, age_s = _name_age(node, now)
    cells: Cells = [
        name,
        ",".join(states),
        ",".join(sorted(roles)) or "<none>",
        age_s,
        info.get("kubeletVersion", ""),
        _node_address(node, "InternalIP"),
        _node_address(node, "ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]
    return cells, None


EVENT_COLUMNS = [
    _col("Last Seen", "The time at which the most recent occurrence of this event was recorded."),
    _col("Type", "Type of this event (Normal, Warning), new types could be added in the future"),
    _col("Reason", "This should be a short, machine understandable string that gives the reason "),
    _col("Object", "The object that this event is about."),
    _col("Subobject", "The field of the object the event is about.", prio=1),
    _col("Source", "The component reporting this event.", prio=1),
    _col("Message", "A human-readable description of the status of this operation."),
    _col("First Seen", "The time at which the event was first recorded.", prio=1),
    _col("Count", "The number of times this event has occurred.", prio=1),
    {**NAME_COLUMN, "priority": 1},
]


def _core_event(ev: Mapping[str, Any]) -> Mapping[str, Any]:
    """An ``events.k8s.io/v1`` Event in core-v1 field names (kube prints both alike)."""
    if "regarding" not in ev and "note" not in ev and "deprecatedCount" not in ev:
        return ev
    return {
        "metadata": ev.get("metadata"),
        "involvedObject": ev.get("regarding") or {},
        "reason": ev.get("reason"),
        "message": ev.get("note"),
        "type": ev.get("type"),
        "source": ev.get("deprecatedSource") or {},
        "firstTimestamp": ev.get("deprecatedFirstTimestamp"),
        "lastTimestamp": ev.get("deprecatedLastTimestamp"),
        "count": ev.get("deprecatedCount"),
        "eventTime": ev.get("eventTime"),
        "series": ev.get("series"),
        "reportingComponent": ev.get("reportingController"),
        "reportingInstance": ev.get("reportingInstance"),
    }


def print_event(event: Mapping[str, Any], now: datetime) -> tuple[Cells, None]:
    """kube's ``printEvent``: LAST SEEN falls back to first seen, then to eventTime."""
    ev = _core_event(event)
    first = age(ev.get("firstTimestamp"), now)
    if _parse_time(ev.get("firstTimestamp")) is None:
        first = age(ev.get("eventTime"), now)
    last = age(ev.get("lastTimestamp"), now)
    if _parse_time(ev.get("lastTimestamp")) is None:
        last = first
    count = ev.get("count") or 0
    series = ev.get("series")
    if isinstance(series, Mapping):
        last = age(series.get("lastObservedTime"), now)
        count = series.get("count") or 0
    elif not count:
        count = 1
    inv = ev.get("involvedObject") or {}
    kind = str(inv.get("kind") or "").lower()
    target = f"{kind}/{inv['name']}" if inv.get("name") else kind
    src = ev.get("source") or {}
    component = src.get("component") or ev.get("reportingComponent") or ""
    instance = src.get("host") or ev.get("reportingInstance") or ""
    source = f"{component}, {instance}" if instance else component
    cells: Cells = [
        last,
        ev.get("type") or "",
        ev.get("reason") or "",
        target,
        inv.get("fieldPath") or "",
        source,
        str(ev.get("message") or "").strip(),
        first,
        int(count),
        _meta(event).get("name", ""),
    ]
    return cells, None


NAMESPACE_COLUMNS = [
    NAME_COLUMN,
    _col("Status", "The status of the namespace"),
    AGE_COLUMN,
]


def print_namespace(ns: Mapping[str, Any], now: datetime) -> tuple[Cells, None]:
    """kube's ``printNamespace``."""
    name, age_s = _name_age(ns, now)
    return [name, _d(ns, "status", "phase") or "", age_s], None


SERVICE_COLUMNS = [
    NAME_COLUMN,
    _col("Type", "type determines how the Service is exposed."),
    _col("Cluster-IP", "clusterIP is the IP address of the service."),
    _col(
        "External-IP", "externalIPs is a list of IP addresses for which nodes also accept traffic."
    ),
    _col("Port(s)", "The list of ports that are exposed by this service."),
    AGE_COLUMN,
    _col(
        "Selector",
        "Route service traffic to pods with label keys and values matching this.",
        prio=1,
    ),
]


def _lb_ips(svc: Mapping[str, Any]) -> str:
    ing = _lst(_d(svc, "status", "loadBalancer", "ingress"))
    return ",".join(str(i.get("ip") or i.get("hostname") or "") for i in ing if i)


def print_service(svc: Mapping[str, Any], now: datetime) -> tuple[Cells, None]:
    """kube's ``printService`` (wide, so load-balancer addresses are not shortened)."""
    spec = svc.get("spec") or {}
    typ = spec.get("type") or "ClusterIP"
    cips = _lst(spec.get("clusterIPs"))
    cluster_ip = cips[0] if cips else spec.get("clusterIP") or "<none>"
    ext = [str(x) for x in _lst(spec.get("externalIPs"))]
    if typ in ("ClusterIP", "NodePort"):
        external = ",".join(ext) or "<none>"
    elif typ == "LoadBalancer":
        lb = [x for x in _lb_ips(svc).split(",") if x]
        external = ",".join(lb + ext) or "<pending>"
    elif typ == "ExternalName":
        external = str(spec.get("externalName") or "")
    else:
        external = "<unknown>"
    ports = []
    for p in _lst(spec.get("ports")):
        proto = p.get("protocol") or "TCP"
        node_port = p.get("nodePort") or 0
        ports.append(
            f"{p.get('port')}:{node_port}/{proto}" if node_port else f"{p.get('port')}/{proto}"
        )
    name, age_s = _name_age(svc, now)
    selector = _format_labels(spec.get("selector"))
    return [name, typ, cluster_ip, external, ",".join(ports) or "<none>", age_s, selector], None


DEPLOYMENT_COLUMNS = [
    NAME_COLUMN,
    _col("Ready", "Number of the pod with ready state"),
    _col("Up-to-date", "Total number of non-terminated pods targeted by this deployment."),
    _col("Available", "Total number of available pods targeted by this deployment."),
    AGE_COLUMN,
    _col("Containers", "Names of each container in the template.", prio=1),
    _col("Images", "Images referenced by each container in the template.", prio=1),
    _col("Selector", "Label selector for pods.", prio=1),
]


def _containers_images(obj: Mapping[str, Any]) -> tuple[str, str]:
    cs = _lst(_d(obj, "spec", "template", "spec", "containers"))
    return ",".join(str(c.get("name", "")) for c in cs), ",".join(
        str(c.get("image", "")) for c in cs
    )


def print_deployment(dep: Mapping[str, Any], now: datetime) -> tuple[Cells, None]:
    """kube's ``printDeployment``: READY ready/desired, then updated and available counts."""
    spec, status = dep.get("spec") or {}, dep.get("status") or {}
    desired = spec.get("replicas", 1)
    name, age_s = _name_age(dep, now)
    containers, images = _containers_images(dep)
    cells: Cells = [
        name,
        f"{int(status.get('readyReplicas') or 0)}/{int(desired or 0)}",
        int(status.get("updatedReplicas") or 0),
        int(status.get("availableReplicas") or 0),
        age_s,
        containers,
        images,
        _selector_string(spec.get("selector")),
    ]
    return cells, None


HPA_COLUMNS = [
    NAME_COLUMN,
    _col("Reference", "reference to the target object"),
    _col("Targets", "the current and target metric values"),
    _col("MinPods", "the minimum number of replicas", typ="integer"),
    _col("MaxPods", "the maximum number of replicas", typ="integer"),
    _col("Replicas", "the current number of replicas", typ="integer"),
    AGE_COLUMN,
]


def _hpa_targets(spec: Mapping[str, Any]) -> str:
    out = []
    for m in _lst(spec.get("metrics")):
        kind = str(m.get("type") or "")
        source = m.get(kind[:1].lower() + kind[1:]) if kind else None
        target = (source or {}).get("target") or {}
        value = target.get("averageUtilization")
        value = (
            f"{value}%" if value is not None else target.get("averageValue") or target.get("value")
        )
        out.append(f"<unknown>/{value if value is not None else '<unknown>'}")
    if not out and spec.get("targetCPUUtilizationPercentage") is not None:
        out.append(f"<unknown>/{spec['targetCPUUtilizationPercentage']}%")
    return ", ".join(out) or "<none>"


def print_hpa(hpa: Mapping[str, Any], now: datetime) -> tuple[Cells, None]:
    """kube's ``printHorizontalPodAutoscaler`` (current values unknown: no metrics here)."""
    spec, status = hpa.get("spec") or {}, hpa.get("status") or {}
    ref = spec.get("scaleTargetRef") or {}
    name, age_s = _name_age(hpa, now)
    cells: Cells = [
        name,
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        _hpa_targets(spec),
        "<unset>" if spec.get("minReplicas") is None else int(spec["minReplicas"]),
        int(spec.get("maxReplicas") or 0),
        int(status.get("currentReplicas") or 0),
        age_s,
    ]
    return cells, None


REPLICASET_COLUMNS = [
    NAME_COLUMN,
    _col("Desired", "Number of desired pods."),
    _col("Current", "Number of actual running pods."),
    _col("Ready", "Number of pods with ready state."),
    AGE_COLUMN,
    _col("Containers", "Names of each container in the template.", prio=1),
    _col("Images", "Images referenced by each container in the template.", prio=1),
    _col("Selector", "Label selector for pods.", prio=1),
]


def print_replicaset(rs: Mapping[str, Any], now: datetime) -> tuple[Cells, None]:
    """kube's ``printReplicaSet``."""
    spec, status = rs.get("spec") or {}, rs.get("status") or {}
    name, age_s = _name_age(rs, now)
    containers, images = _containers_images(rs)
    cells: Cells = [
        name,
        int(spec.get("replicas", 1) or 0),
        int(status.get("replicas") or 0),
        int(status.get("readyReplicas") or 0),
        age_s,
        containers,
        images,
        _selector_string(spec.get("selector")),
    ]
    return cells, None


CONFIGMAP_COLUMNS = [NAME_COLUMN, _col("Data", "Number of keys.", typ="string"), AGE_COLUMN]


def print_configmap(cm: Mapping[str, Any], now: datetime) -> tuple[Cells, None]:
    """kube's ``printConfigMap``: DATA counts data and binaryData keys."""
    name, age_s = _name_age(cm, now)
    n = _count(cm.get("data")) + _count(cm.get("binaryData"))
    return [name, n, age_s], None


SECRET_COLUMNS = [
    NAME_COLUMN,
    _col("Type", "The type of the secret"),
    _col("Data", "The number of keys in the secret."),
    AGE_COLUMN,
]


def print_secret(sec: Mapping[str, Any], now: datetime) -> tuple[Cells, None]:
    """kube's ``printSecret`` (counts keys, never shows values)."""
    name, age_s = _name_age(sec, now)
    return [name, sec.get("type") or "Opaque", _count(sec.get("data")), age_s], None


LEASE_COLUMNS = [NAME_COLUMN, _col("Holder", "The holder of the lease."), AGE_COLUMN]


def print_lease(lease: Mapping[str, Any], now: datetime) -> tuple[Cells, None]:
    """kube's ``printLease``."""
    name, age_s = _name_age(lease, now)
    return [name, _d(lease, "spec", "holderIdentity") or "", age_s], None


SERVICEACCOUNT_COLUMNS = [NAME_COLUMN, _col("Secrets", "Number of secrets."), AGE_COLUMN]


def print_serviceaccount(sa: Mapping[str, Any], now: datetime) -> tuple[Cells, None]:
    """kube's ``printServiceAccount``."""
    name, age_s = _name_age(sa, now)
    return [name, len(_lst(sa.get("secrets"))), age_s], None


CREATED_AT_COLUMNS = [
    NAME_COLUMN,
    _col("Created At", _AGE_DESC, typ="date"),
]


def print_created_at(obj: Mapping[str, Any], now: datetime) -> tuple[Cells, None]:
    """kube's default table convertor (CRDs, roles): NAME and the RFC 3339 creation time."""
    m = _meta(obj)
    return [m.get("name", ""), m.get("creationTimestamp")], None


def print_name_age(obj: Mapping[str, Any], now: datetime) -> tuple[Cells, None]:
    """NAME and AGE, for kinds without a printer of their own here."""
    name, age_s = _name_age(obj, now)
    return [name, age_s], None


PRINTERS: dict[tuple[str, str], tuple[list[Column], Printer]] = {
    ("", "pods"): (POD_COLUMNS, print_pod),
    ("", "nodes"): (NODE_COLUMNS, print_node),
    ("", "events"): (EVENT_COLUMNS, print_event),
    ("events.k8s.io", "events"): (EVENT_COLUMNS, print_event),
    ("", "namespaces"): (NAMESPACE_COLUMNS, print_namespace),
    ("", "services"): (SERVICE_COLUMNS, print_service),
    ("", "configmaps"): (CONFIGMAP_COLUMNS, print_configmap),
    ("", "secrets"): (SECRET_COLUMNS, print_secret),
    ("", "serviceaccounts"): (SERVICEACCOUNT_COLUMNS, print_serviceaccount),
    ("apps", "deployments"): (DEPLOYMENT_COLUMNS, print_deployment),
    ("apps", "replicasets"): (REPLICASET_COLUMNS, print_replicaset),
    ("autoscaling", "horizontalpodautoscalers"): (HPA_COLUMNS, print_hpa),
    ("coordination.k8s.io", "leases"): (LEASE_COLUMNS, print_lease),
    ("apiextensions.k8s.io", "customresourcedefinitions"): (CREATED_AT_COLUMNS, print_created_at),
    ("rbac.authorization.k8s.io", "roles"): (CREATED_AT_COLUMNS, print_created_at),
    ("rbac.authorization.k8s.io", "clusterroles"): (CREATED_AT_COLUMNS, print_created_at),
}
DEFAULT_PRINTER: tuple[list[Column], Printer] = ([NAME_COLUMN, AGE_COLUMN], print_name_age)


# ---- JSONPath (the subset CRD printer columns use) -------------------------------------
class JSONPathError(ValueError):
    """A printer column's jsonPath this server cannot parse."""


_Step = tuple[str, Any]
_FILTER_RE = re.compile(
    r"""^@((?:\.[\w-]+|\['[^']*'\])*)\s*(?:(==|!=|<=|>=|<|>)\s*("[^"]*"|'[^']*'|-?[\d.]+|true|false))?$"""
)


def parse_jsonpath(expr: str) -> list[_Step]:
    """Steps of a kube JSONPath such as ``.status.conditions[?(@.type=="Ready")].status``.

    Supported: fields (``.a``, ``['a.b']``, ``\\.`` escapes), indexes (``[0]``, ``[-1]``),
    slices (``[-1:]``), wildcards (``[*]``, ``.*``) and filters comparing a field to a
    literal. Curly braces around the whole expression are accepted and dropped.
    """
    s = expr.strip()
    if s.startswith("{") and s.endswith("}"):
        s = s[1:-1].strip()
    steps: list[_Step] = []
    i = 0
    while i < len(s):
        ch = s[i]
        if ch == ".":
            i += 1
            if i < len(s) and s[i] == "*":
                steps.append(("wild", None))
                i += 1
                continue
            name = []
            while i < len(s) and s[i] not in ".[":
                if s[i] == "\\" and i + 1 < len(s):
                    i += 1
                name.append(s[i])
                i += 1
            if name:
                steps.append(("field", "".join(name)))
        elif ch == "[":
            end = s.find("]", i) if not s.startswith("[?(", i) else s.find(")]", i) + 1
            if end <= i:
                raise JSONPathError(f"unterminated [ in {expr!r}")
            steps.append(_bracket(s[i + 1 : end], expr))
            i = end + 1
        else:
            raise JSONPathError(f"unexpected {ch!r} in {expr!r}")
    return steps


def _bracket(inner: str, expr: str) -> _Step:
    inner = inner.strip()
    if inner == "*":
        return ("wild", None)
    if inner[:1] in "'\"" and inner[-1:] == inner[:1] and len(inner) >= 2:
        return ("field", inner[1:-1])
    if inner.startswith("?(") and inner.endswith(")"):
        m = _FILTER_RE.match(inner[2:-1].strip())
        if not m:
            raise JSONPathError(f"unsupported filter in {expr!r}")
        sub = parse_jsonpath(m.group(1)) if m.group(1) else []
        lit: Any = None
        if m.group(3) is not None:
            raw = m.group(3)
            if raw[0] in "'\"":
                lit = raw[1:-1]
            elif raw in ("true", "false"):
                lit = raw == "true"
            else:
                lit = float(raw)
        return ("filter", (sub, m.group(2), lit))
    try:
        if ":" in inner:
            parts = [int(p) if p.strip() else None for p in inner.split(":")]
            if len(parts) > 3:
                raise JSONPathError(f"bad slice in {expr!r}")
            return ("slice", slice(*parts))
        return ("index", int(inner))
    except ValueError:
        raise JSONPathError(f"unsupported [{inner}] in {expr!r}") from None


def _compare(value: Any, op: str | None, lit: Any) -> bool:
    if op is None:
        return True
    if isinstance(lit, float) and isinstance(value, int | float) and not isinstance(value, bool):
        a: Any = float(value)
    else:
        a = value
    try:
        if op == "==":
            return bool(a == lit)
        if op == "!=":
            return bool(a != lit)
        if op == "<":
            return bool(a < lit)
        if op == ">":
            return bool(a > lit)
        if op == "<=":
            return bool(a <= lit)
        return bool(a >= lit)
    except TypeError:
        return False


def eval_jsonpath(steps: Sequence[_Step], obj: Any) -> list[Any]:
    """Every value the path reaches; missing keys and out-of-range indexes yield nothing."""
    cur = [obj]
    for kind, arg in steps:
        nxt: list[Any] = []
        for v in cur:
            if kind == "field":
                if isinstance(v, Mapping) and arg in v:
                    nxt.append(v[arg])
            elif kind == "wild":
                if isinstance(v, Mapping):
                    nxt.extend(v[k] for k in sorted(v))
                elif isinstance(v, list):
                    nxt.extend(v)
            elif kind == "index":
                if isinstance(v, list) and -len(v) <= arg < len(v):
                    nxt.append(v[arg])
            elif kind == "slice":
                if isinstance(v, list):
                    nxt.extend(v[arg])
            elif kind == "filter" and isinstance(v, list):
                sub, op, lit = arg
                for item in v:
                    found = eval_jsonpath(sub, item)
                    if found and _compare(found[0], op, lit):
                        nxt.append(item)
        cur = nxt
    return cur


def _go_text(value: Any) -> str:
    """How kube's JSONPath prints a value: JSON for maps and lists, Go's %v otherwise."""
    if isinstance(value, Mapping | list):
        return orjson.dumps(value).decode()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value)
    return str(value)


def _cell(typ: str, value: Any, now: datetime) -> Any:
    """apiextensions' ``cellForJSONValue``: a value of the wrong type prints as <none>."""
    if value is None:
        return None
    if typ == "string":
        return _go_text(value)
    if typ == "integer" and isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if typ == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if typ == "boolean" and isinstance(value, bool):
        return value
    if typ == "date" and isinstance(value, str):
        t = _parse_time(value)
        return "<invalid>" if t is None else human_duration((now - t).total_seconds())
    return None


def crd_columns(
    crd: Mapping[str, Any] | None, version: str
) -> list[tuple[Column, list[_Step] | None]]:
    """A CRD version's printer columns with their parsed paths (None: the NAME column).

    As in the apiextensions server: NAME comes first, then the CRD's columns (per version,
    or the v1beta1-style top-level list); a CRD without columns gets AGE. A column whose
    path does not parse is dropped (kube rejects such a CRD at creation).
    """
    defs: list[Any] = []
    if crd is not None:
        spec = crd.get("spec") or {}
        for v in _lst(spec.get("versions")):
            if v.get("name") == version:
                defs = _lst(v.get("additionalPrinterColumns"))
        if not defs:
            defs = _lst(spec.get("additionalPrinterColumns"))
    if not defs:
        defs = [
            {
                "name": "Age",
                "type": "date",
                "jsonPath": ".metadata.creationTimestamp",
                "description": _AGE_DESC,
            }
        ]
    out: list[tuple[Column, list[_Step] | None]] = [(NAME_COLUMN, None)]
    for d in defs:
        path = str(d.get("jsonPath") or d.get("JSONPath") or "")
        try:
            steps = parse_jsonpath(path)
        except JSONPathError:
            continue
        desc = d.get("description") or (
            f"Custom resource definition column (in JSONPath format): {path}"
        )
        col = _col(
            str(d.get("name", "")),
            str(desc),
            typ=str(d.get("type") or "string"),
            fmt=str(d.get("format") or ""),
            prio=int(d.get("priority") or 0),
        )
        out.append((col, steps))
    return out


# ---- the Table -------------------------------------------------------------------------
def _printer(rt: ResourceType, crd: Mapping[str, Any] | None) -> tuple[list[Column], Printer]:
    if not rt.custom:
        return PRINTERS.get(rt.key, DEFAULT_PRINTER)
    cols = crd_columns(crd, rt.version)

    def print_custom(obj: Mapping[str, Any], now: datetime) -> tuple[Cells, None]:
        cells: Cells = []
        for col, steps in cols:
            if steps is None:
                cells.append(_meta(obj).get("name", ""))
                continue
            found = eval_jsonpath(steps, obj)
            cells.append(_cell(col["type"], found[0] if found else None, now))
        return cells, None

    return [c for c, _ in cols], print_custom


def _row_object(obj: Mapping[str, Any], version: str, include: str) -> Any:
    if include == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": f"{TABLE_GROUP}/{version}",
        "metadata": _meta(obj),
    }


def include_object(query: Mapping[str, str]) -> str:
    """The ``includeObject`` option (400 for a value kube would also reject)."""
    value = query.get("includeObject") or "Metadata"
    if value not in INCLUDE_OBJECT:
        raise errors.bad_request(
            f'includeObject: Unsupported value: "{value}": supported values: '
            '"Metadata", "None", "Object"'
        )
    return value


def to_table(
    rt: ResourceType,
    result: Mapping[str, Any],
    *,
    version: str = "v1",
    include: str = "Metadata",
    crd: Mapping[str, Any] | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The Table for a GET (one object) or LIST (``items``) result of ``rt``.

    ``crd`` is the CRD that defines ``rt`` (custom resources only): its printer columns
    are read per request so a CRD update changes the columns at once, as in kube.
    """
    when = now or datetime.now(UTC)
    columns, printer = _printer(rt, crd)
    is_list = result.get("kind") != rt.kind
    objs = _lst(result.get("items")) if is_list else [result]
    rows = []
    for obj in objs:
        cells, conditions = printer(obj, when)
        row: dict[str, Any] = {"cells": cells}
        if conditions:
            row["conditions"] = conditions
        if include != "None":
            row["object"] = _row_object(obj, version, include)
        rows.append(row)
    meta = result.get("metadata") or {}
    table_meta: dict[str, Any] = {}
    if meta.get("resourceVersion"):
        table_meta["resourceVersion"] = meta["resourceVersion"]
    if is_list and meta.get("continue"):
        table_meta["continue"] = meta["continue"]
        if meta.get("remainingItemCount") is not None:
            table_meta["remainingItemCount"] = meta["remainingItemCount"]
    return {
        "kind": "Table",
        "apiVersion": f"{TABLE_GROUP}/{version}",
        "metadata": table_meta,
        "columnDefinitions": columns,
        "rows": rows,
    }
