"""A kubelet stand-in for one simulated edge node, speaking only the Kubernetes API.

Embedded mode has no container runtime, yet the GM's controllers must see pods move
exactly as on a real node: Pending (scheduled, IPs, ContainerCreating), Running after
`podStartSeconds`, and for run-to-completion workers (train, eval: restartPolicy
OnFailure or Never) Succeeded after `podRunSeconds`. Inference workers (restartPolicy
Always or worker-type `inference`) keep running until deleted. All writes go through
the pods/status subresource, as a kubelet's do, so nothing inside the GM can tell.

A pod may opt in to really running its container: with the annotation
`sedna-gm.io/simulate-run: "true"` the first container's `command + args` is started
as a local process (its `value` env entries added) and the pod ends Succeeded or
Failed by its exit code. A failing command makes the pod Failed at once, even for
OnFailure: a real kubelet would restart the container, but the point of the
simulation is to let the job's Failed path be seen.

A real Sedna worker reports its results (trained model, eval metrics) to its node's
LC over HTTP just before it exits. `on_worker_finished` plays that report: it is
called for a train or eval worker right before the pod is marked Succeeded, so the
LC's "completed" status normally reaches the GM before the pod phase does, in the
same order as on a real node.
"""

from __future__ import annotations

import contextlib
import copy
import os
import subprocess
import threading
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from loguru import logger

from sedna.embedded.pod_logs import (
    append_line,
    container_names,
    ensure_log_dir,
    log_path,
    open_log,
    remove_pod_logs,
)
from sedna.embedded.scheduler import Scheduler
from sedna.runtime.clock import Clock, RealClock
from sedna.runtime.kube import NODES, PODS, ApiError, KubeClient, NotFound

SIMULATE_RUN_ANNOTATION = "sedna-gm.io/simulate-run"
WORKER_TYPE_SUFFIX = "/worker-type"
NODE_IP = "127.0.0.1"
# Time between the worker's report to its LC and the pod's exit.
REPORT_LEAD_SECONDS = 0.5
# A failed status write is retried after 0.2 s, doubling to 5 s, 8 tries in all (~16 s).
WRITE_RETRY_SECONDS = 0.2
WRITE_RETRY_MAX_SECONDS = 10.0  # a real kubelet's status sync period

WorkerFinished = Callable[[Mapping[str, Any]], None]


def worker_type(pod: Mapping[str, Any]) -> str:
    """Sedna's `<kind>.sedna.io/worker-type` label value ("train", "eval", "inference"), or ""."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    for key, value in labels.items():
        if key.endswith(WORKER_TYPE_SUFFIX):
            return str(value)
    return ""


def runs_to_completion(pod: Mapping[str, Any]) -> bool:
    """Whether the pod's containers are expected to exit (train/eval) or serve (inference)."""
    if worker_type(pod) == "inference":
        return False
    policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
    return policy in ("OnFailure", "Never")


def _nodes_named(pod: Mapping[str, Any]) -> set[str]:
    """Nodes an unscheduled pod asks for by hostname (nodeSelector or required affinity)."""
    spec = pod.get("spec") or {}
    names: set[str] = set()
    selector = spec.get("nodeSelector") or {}
    if "kubernetes.io/hostname" in selector:
        names.add(str(selector["kubernetes.io/hostname"]))
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in affinity.get("nodeSelectorTerms") or []:
        for expr in term.get("matchExpressions") or []:
            if expr.get("key") == "kubernetes.io/hostname" and expr.get("operator") == "In":
                names.update(str(v) for v in expr.get("values") or [])
        for expr in term.get("matchFields") or []:
            if expr.get("key") == "metadata.name" and expr.get("operator") == "In":
                names.update(str(v) for v in expr.get("values") or [])
    return names


@dataclass
class _Pod:
    namespace: str
    name: str
    uid: str
    obj: dict[str, Any]
    phase: str = ""
    process: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    started_at: str = ""
    done: bool = False
    log: Any = field(default=None, repr=False)
    writes: int = 0  # status writes begun: a retry of an older one is dropped

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class SimulatedKubelet:
    """Drives the pods bound to one node through their phases."""

    def __init__(
        self,
        node: str,
        kube: KubeClient,
        *,
        pod_start_seconds: float = 1.0,
        pod_run_seconds: float = 3.0,
        on_worker_finished: WorkerFinished | None = None,
        log_dir: Path | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.node = node
        self.kube = kube
        self.pods = kube.resource(PODS)
        self.start_seconds = pod_start_seconds
        self.run_seconds = pod_run_seconds
        self.on_worker_finished = on_worker_finished
        self.log_dir = log_dir
        self.clock: Clock = clock or RealClock()
        self.scheduler = Scheduler(f"{node}/kubelet", self.clock)
        self._tracked: dict[str, _Pod] = {}  # uid -> pod, touched only on the scheduler thread
        self._stop = threading.Event()
        self._halted = False
        self._watch: Any = None
        self._watch_thread: threading.Thread | None = None
        self._unbound_warned: set[str] = set()

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        self.register_node()
        self.scheduler.start()
        self._watch_thread = threading.Thread(
            target=self._watch_loop, name=f"{self.node}/kubelet-watch", daemon=True
        )
        self._watch_thread.start()

    def request_stop(self) -> None:
        """Stop driving pods; safe in a signal handler (no lock, no I/O)."""
        self._halted = True
        self.scheduler.request_stop()

    def stop(self) -> None:
        self.request_stop()
        self._stop.set()
        watch = self._watch
        if watch is not None:
            watch.close()
        if self._watch_thread is not None:
            self._watch_thread.join(5)
        self.scheduler.stop()
        self._kill_all()  # the scheduler thread has ended: no race on _tracked

    def _kill_all(self) -> None:
        for p in self._tracked.values():
            self._kill(p)

    # -- the Node object -------------------------------------------------------------

    def register_node(self) -> None:
        """Create (or refresh) the Node object so `kubectl get nodes` shows the node Ready."""
        nodes = self.kube.resource(NODES)
        body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.node,
                "labels": {
                    "kubernetes.io/hostname": self.node,
                    "node-role.kubernetes.io/edge": "",
                    "sedna-gm.io/simulated": "true",
                },
            },
            "spec": {},
            # A kubelet registers with its status (the node strategy keeps it on create),
            # so no reader ever sees a node without conditions.
            "status": self._node_status(),
        }
        try:
            nodes.create(None, body)
            logger.info("{}/kubelet: registered node", self.node)
            return
        except ApiError as exc:
            if exc.status != 409:
                raise
        nodes.patch(None, self.node, {"status": self._node_status()}, subresource="status")

    def _node_status(self) -> dict[str, Any]:
        now = _timestamp(self.clock)
        return {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "simulated kubelet is posting ready status",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
            "addresses": [
                {"type": "InternalIP", "address": NODE_IP},
                {"type": "Hostname", "address": self.node},
            ],
            "nodeInfo": {
                "kubeletVersion": "v1.30.0-sedna-gm-simulated",
                "containerRuntimeVersion": "simulated://1",
                "operatingSystem": "linux",
                "architecture": os.uname().machine if hasattr(os, "uname") else "amd64",
            },
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        }

    # -- watching pods ---------------------------------------------------------------

    def _watch_loop(self) -> None:
        """List then watch all pods; relist after a 410 or a broken stream."""
        while not self._stop.is_set():
            try:
                listed = self.pods.list()
                for pod in listed.get("items") or []:
                    self._seen(pod)
                rv = (listed.get("metadata") or {}).get("resourceVersion")
                self._watch = self.pods.watch(resource_version=rv, timeout_seconds=300)
                for event in self._watch:
                    if self._halted:
                        return
                    kind = event.get("type")
                    obj = event.get("object") or {}
                    if kind == "ERROR":
                        break
                    if kind == "DELETED":
                        self._gone(obj)
                    elif kind in ("ADDED", "MODIFIED"):
                        self._seen(obj)
            except Exception as exc:
                if self._stop.is_set():
                    return
                logger.debug("{}/kubelet: pod watch ended ({}); relisting", self.node, exc)
                self._stop.wait(1.0)
            finally:
                if self._watch is not None:
                    self._watch.close()
                    self._watch = None

    def _seen(self, pod: Mapping[str, Any]) -> None:
        copied = _plain(pod)
        self.scheduler.call_soon(lambda: self._admit(copied))

    def _gone(self, pod: Mapping[str, Any]) -> None:
        copied = _plain(pod)
        self.scheduler.call_soon(lambda: self._forget(copied))

    # -- pod lifecycle (scheduler thread) ----------------------------------------------

    def _admit(self, pod: dict[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        uid = str(meta.get("uid") or "")
        if not uid or uid in self._tracked:
            if uid in self._tracked:
                self._tracked[uid].obj = pod
            return
        spec = pod.get("spec") or {}
        node = spec.get("nodeName")
        if not node:
            self._maybe_bind(pod)
            return
        if node != self.node or meta.get("deletionTimestamp"):
            return
        p = _Pod(str(meta.get("namespace") or ""), str(meta.get("name") or ""), uid, pod)
        self._tracked[uid] = p
        phase = (pod.get("status") or {}).get("phase") or ""
        if phase in ("Succeeded", "Failed"):
            p.phase, p.done = phase, True
            return
        if phase == "Running":
            # The GM (and this kubelet) restarted while the pod ran: let it finish.
            p.phase = "Running"
            status = pod.get("status") or {}
            p.started_at = status.get("startTime") or _timestamp(self.clock)
            ran = self._seconds_since(_running_since(status))
            logger.info("{}/kubelet: pod {} resumed (Running)", self.node, p.key)
            self._after_running(p, already_ran=ran)
            return
        try:
            self._set_pending(p)
        except Exception:
            # the scheduler runs this admission again (a refused write): as a new pod,
            # or the retry would find it tracked and never start it
            self._tracked.pop(uid, None)
            raise
        self.scheduler.call_later(self.start_seconds, lambda: self._set_running(p))

    def _forget(self, pod: Mapping[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        p = self._tracked.pop(str(meta.get("uid") or ""), None)
        if p is not None:
            p.done = True
            self._kill(p)
            logger.info("{}/kubelet: pod {} deleted", self.node, p.key)
        if (pod.get("spec") or {}).get("nodeName") == self.node and self.log_dir is not None:
            # a kubelet removes a deleted pod's container logs (after the kill: no writer
            # is left); the events come in order, so a new pod of the same name is later
            remove_pod_logs(
                self.log_dir,
                str(meta.get("namespace") or ""),
                str(meta.get("name") or ""),
                container_names(pod),
            )

    def _maybe_bind(self, pod: Mapping[str, Any]) -> None:
        """Play the scheduler for a pod that names this node by hostname but is unbound."""
        meta = pod.get("metadata") or {}
        if self.node not in _nodes_named(pod):
            return
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": ns},
            "target": {"apiVersion": "v1", "kind": "Node", "name": self.node},
        }
        try:
            self.kube.request("POST", PODS.path(ns, name, "binding"), body=binding)
        except ApiError:
            try:  # servers without pods/binding: set spec.nodeName, as the binding would
                self.pods.patch(ns, name, {"spec": {"nodeName": self.node}})
            except ApiError as exc:
                if f"{ns}/{name}" not in self._unbound_warned:
                    self._unbound_warned.add(f"{ns}/{name}")
                    logger.warning(
                        "{}/kubelet: cannot bind pod {}/{}: {}", self.node, ns, name, exc
                    )
                return
        logger.info("{}/kubelet: bound pod {}/{} to this node", self.node, ns, name)

    def _write_status(
        self, p: _Pod, status: dict[str, Any], then: Callable[[], None] | None = None
    ) -> None:
        """Write the pod's status, then run `then`; a failed write is retried.

        A kubelet stopped for a while (SIGSTOP, a laptop's sleep) comes back to pooled
        connections the server has closed: the first write after fails on the stale
        connection; a full disk under the embedded store refuses writes for as long as it
        lasts. It is retried with backoff (`WRITE_RETRY_SECONDS` doubling to
        `WRITE_RETRY_MAX_SECONDS`, then at that pace until it lands), as a real kubelet's
        status manager syncs again, so the pod goes on; a newer write for the pod
        supersedes a pending retry, so an old status never lands after a newer one.
        """
        p.writes += 1
        self._attempt_write(p, status, then, p.writes, 1)

    def _attempt_write(
        self,
        p: _Pod,
        status: dict[str, Any],
        then: Callable[[], None] | None,
        seq: int,
        attempt: int,
    ) -> None:
        if seq != p.writes:
            return  # superseded by a newer status
        if p.done and status.get("phase") not in ("Succeeded", "Failed"):
            return
        if p.uid not in self._tracked:
            return
        try:
            self.pods.patch(p.namespace, p.name, {"status": status}, subresource="status")
        except NotFound:
            self._tracked.pop(p.uid, None)
            p.done = True
            self._kill(p)
            return
        except ApiError as exc:
            if not _retryable(exc):
                logger.warning(
                    "{}/kubelet: pod {} status {} not written after {} attempt(s): {}",
                    self.node, p.key, status.get("phase"), attempt, exc,
                )  # fmt: skip
                return
            delay = min(WRITE_RETRY_SECONDS * 2 ** min(attempt - 1, 16), WRITE_RETRY_MAX_SECONDS)
            logger.info(
                "{}/kubelet: pod {} status write failed ({}); retrying in {:g} s",
                self.node, p.key, exc.reason, delay,
            )  # fmt: skip
            self.scheduler.call_later(
                delay, lambda: self._attempt_write(p, status, then, seq, attempt + 1)
            )
            return
        p.phase = str(status.get("phase") or p.phase)
        if then is not None:
            then()

    def _containers(self, p: _Pod) -> list[dict[str, Any]]:
        return list((p.obj.get("spec") or {}).get("containers") or [])

    def _init_containers(self, p: _Pod) -> list[dict[str, Any]]:
        return list((p.obj.get("spec") or {}).get("initContainers") or [])

    def _pod_ip(self, p: _Pod) -> str:
        if (p.obj.get("spec") or {}).get("hostNetwork"):
            return NODE_IP
        return f"10.88.0.{zlib.crc32(p.uid.encode()) % 250 + 2}"

    def _set_pending(self, p: _Pod) -> None:
        now = _timestamp(self.clock)
        p.started_at = now
        status = {
            "phase": "Pending",
            "hostIP": NODE_IP,
            "podIP": self._pod_ip(p),
            "startTime": now,
            "conditions": [
                _cond("PodScheduled", "True", now),
                _cond("Initialized", "False", now, "ContainersNotInitialized"),
                _cond("ContainersReady", "False", now, "ContainersNotReady"),
                _cond("Ready", "False", now, "ContainersNotReady"),
            ],
            "containerStatuses": [
                _container_status(c, {"waiting": {"reason": "ContainerCreating"}}, ready=False)
                for c in self._containers(p)
            ],
        }
        self._write_status(
            p, status, lambda: logger.info("{}/kubelet: pod {} Pending", self.node, p.key)
        )

    def _running_status(self, p: _Pod, now: str) -> dict[str, Any]:
        status: dict[str, Any] = {
            "phase": "Running",
            "hostIP": NODE_IP,
            "podIP": self._pod_ip(p),
            "startTime": p.started_at or now,
            "conditions": [
                _cond("PodScheduled", "True", now),
                _cond("Initialized", "True", now),
                _cond("ContainersReady", "True", now),
                _cond("Ready", "True", now),
            ],
            "containerStatuses": [
                _container_status(
                    c, {"running": {"startedAt": now}}, ready=True, restarts=p.restarts
                )
                for c in self._containers(p)
            ],
        }
        inits = self._init_containers(p)
        if inits:
            status["initContainerStatuses"] = [
                _container_status(c, _terminated(0, now, now), ready=False) for c in inits
            ]
        return status

    def _set_running(self, p: _Pod) -> None:
        if p.done or p.uid not in self._tracked:
            return
        if not _wants_real_run(p.obj):
            # Before the status write: whoever sees the pod Running finds the line.
            for c in self._containers(p):
                self._log(
                    p,
                    c,
                    f"[simulated kubelet] container {c.get('name')} started; image "
                    f"{c.get('image', '(none)')} is not run (annotation "
                    f'{SIMULATE_RUN_ANNOTATION}="true" runs its command)',
                )

        def running() -> None:
            logger.info("{}/kubelet: pod {} Running", self.node, p.key)
            self._after_running(p)

        self._write_status(p, self._running_status(p, _timestamp(self.clock)), running)

    def _after_running(self, p: _Pod, already_ran: float = 0.0) -> None:
        """Start the command, or time the simulated run (minus what ran before a restart).

        A worker resumed after its report time is taken to have reported already (or
        to have lost its report while the GM was down, as a real one would): it just
        finishes. Reporting again would hand the GM a stale result for a later stage.
        """
        if _wants_real_run(p.obj):
            self._spawn(p)
        elif runs_to_completion(p.obj):
            lead = min(REPORT_LEAD_SECONDS, self.run_seconds)
            report_in = self.run_seconds - lead - already_ran
            if report_in >= 0:
                self.scheduler.call_later(report_in, lambda: self._report(p))
            finish_in = max(0.0, self.run_seconds - already_ran)
            self.scheduler.call_later(finish_in, lambda: self._finish(p, 0))

    def _seconds_since(self, stamp: str) -> float:
        try:
            then = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        except ValueError:
            return 0.0
        return max(0.0, (self.clock.wall() - then).total_seconds())

    def _report(self, p: _Pod) -> None:
        if p.done or p.uid not in self._tracked or self.on_worker_finished is None:
            return
        if worker_type(p.obj) in ("train", "eval"):
            try:
                self.on_worker_finished(p.obj)
            except Exception as exc:
                logger.warning("{}/kubelet: worker report of {} failed: {}", self.node, p.key, exc)

    def _log(self, p: _Pod, container: Mapping[str, Any], text: str) -> None:
        """A line in a container's log, for `kubectl logs` (see `pod_logs`)."""
        if self.log_dir is not None:
            append_line(self.log_dir, p.namespace, p.name, str(container.get("name")), text)

    def _finish(self, p: _Pod, exit_code: int, message: str = "") -> None:
        if p.done or p.uid not in self._tracked:
            return
        if not _wants_real_run(p.obj):
            for c in self._containers(p):
                self._log(
                    p,
                    c,
                    f"[simulated kubelet] container {c.get('name')} exited with "
                    f"code {exit_code}" + (f": {message}" if message else ""),
                )
        now = _timestamp(self.clock)
        ok = exit_code == 0
        phase = "Succeeded" if ok else "Failed"
        reason = "Completed" if ok else "Error"
        status: dict[str, Any] = {
            "phase": phase,
            "conditions": [
                _cond("PodScheduled", "True", now),
                _cond("Initialized", "True", now),
                _cond("ContainersReady", "False", now, "PodCompleted"),
                _cond("Ready", "False", now, "PodCompleted"),
            ],
            "containerStatuses": [
                _container_status(
                    c,
                    _terminated(exit_code, p.started_at or now, now, reason, message),
                    ready=False,
                    restarts=p.restarts,
                )
                for c in self._containers(p)
            ],
        }
        if not ok:
            status["reason"] = "Error"
            status["message"] = message or f"container exited with code {exit_code}"

        def finished() -> None:
            p.done = True
            logger.info(
                "{}/kubelet: pod {} {}{}",
                self.node,
                p.key,
                phase,
                "" if ok else f" (exit code {exit_code})",
            )

        self._write_status(p, status, finished)

    # -- real processes (opt-in) -----------------------------------------------------

    def _spawn(self, p: _Pod) -> None:
        containers = self._containers(p)
        if not containers:
            self._finish(p, 1, "pod has no container")
            return
        c = containers[0]
        argv = [str(a) for a in (c.get("command") or [])] + [str(a) for a in (c.get("args") or [])]
        if not argv:
            self._finish(p, 127, "container has neither command nor args to run")
            return
        env = dict(os.environ)
        for e in c.get("env") or []:
            if isinstance(e, Mapping) and "name" in e and "value" in e:
                env[str(e["name"])] = str(e["value"])
        out: Any = subprocess.DEVNULL
        if self.log_dir is not None:
            try:
                ensure_log_dir(self.log_dir)
                path = log_path(self.log_dir, p.namespace, p.name, str(c.get("name")))
                out = open(open_log(path), "ab")  # noqa: SIM115
            except (ValueError, OSError) as exc:
                self._finish(p, 127, str(exc))
                return
            p.log = out
        try:
            proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
        except OSError as exc:
            self._close_log(p)
            self._finish(p, 127, f"cannot run {argv[0]}: {exc.strerror}")
            return
        p.process = proc
        logger.info(
            "{}/kubelet: pod {} runs `{}` (pid {})", self.node, p.key, " ".join(argv), proc.pid
        )

        def wait() -> None:
            code = proc.wait()
            self.scheduler.call_soon(lambda: self._exited(p, proc, code))

        threading.Thread(target=wait, name=f"{self.node}/pid-{proc.pid}", daemon=True).start()

    def _exited(self, p: _Pod, proc: subprocess.Popen[bytes], code: int) -> None:
        if p.process is not proc:
            return
        p.process = None
        self._close_log(p)
        if p.done or p.uid not in self._tracked:
            return
        if runs_to_completion(p.obj):
            if code == 0:
                # Report first and exit a little later, so the LC's report reaches the GM
                # before the pod phase does (a real worker reports, then exits).
                self._report(p)
                lead = min(REPORT_LEAD_SECONDS, self.run_seconds)
                self.scheduler.call_later(lead, lambda: self._finish(p, code))
            else:
                self._finish(p, code)
            return
        # A serving container that exited: restart it, as a kubelet does for Always.
        p.restarts += 1
        logger.info("{}/kubelet: pod {} container exited ({}), restarting", self.node, p.key, code)
        self.scheduler.call_later(1.0, lambda: self._restart(p))

    def _restart(self, p: _Pod) -> None:
        if p.done or p.uid not in self._tracked:
            return
        self._write_status(
            p, self._running_status(p, _timestamp(self.clock)), lambda: self._spawn(p)
        )

    def _kill(self, p: _Pod) -> None:
        proc, p.process = p.process, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(3)
            except subprocess.TimeoutExpired:
                proc.kill()
        self._close_log(p)

    @staticmethod
    def _close_log(p: _Pod) -> None:
        if p.log is not None:
            with contextlib.suppress(OSError):
                p.log.close()
            p.log = None


def _retryable(exc: ApiError) -> bool:
    """A lost connection (status 0), throttling or a server error: worth another try."""
    return exc.status == 0 or exc.status == 429 or exc.status >= 500


def _running_since(status: Mapping[str, Any]) -> str:
    """When the first container last started running (its state's startedAt)."""
    for cs in status.get("containerStatuses") or []:
        started = ((cs.get("state") or {}).get("running") or {}).get("startedAt")
        if started:
            return str(started)
    return str(status.get("startTime") or "")


def _wants_real_run(pod: Mapping[str, Any]) -> bool:
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    return str(ann.get(SIMULATE_RUN_ANNOTATION, "")).lower() == "true"


def _plain(obj: Mapping[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(dict(obj))


def _timestamp(clock: Clock) -> str:
    return clock.wall().strftime("%Y-%m-%dT%H:%M:%SZ")


def _cond(kind: str, status: str, now: str, reason: str = "") -> dict[str, Any]:
    c: dict[str, Any] = {"type": kind, "status": status, "lastTransitionTime": now}
    if reason:
        c["reason"] = reason
    return c


def _terminated(
    code: int, started: str, finished: str, reason: str = "Completed", message: str = ""
) -> dict[str, Any]:
    t: dict[str, Any] = {
        "terminated": {
            "exitCode": code,
            "reason": reason,
            "startedAt": started,
            "finishedAt": finished,
        }
    }
    if message:
        t["terminated"]["message"] = message
    return t


def _container_status(
    c: Mapping[str, Any], state: dict[str, Any], *, ready: bool, restarts: int = 0
) -> dict[str, Any]:
    name = str(c.get("name") or "")
    running = "running" in state
    return {
        "name": name,
        "image": str(c.get("image") or ""),
        "imageID": f"simulated://{c.get('image') or ''}",
        "containerID": f"simulated://{name}",
        "ready": ready,
        "started": running,
        "restartCount": restarts,
        "state": state,
    }
