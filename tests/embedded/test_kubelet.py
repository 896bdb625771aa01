"""The simulated kubelet, against the in-process API server over HTTP, in virtual time."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from sedna.embedded.kubelet import SIMULATE_RUN_ANNOTATION, SimulatedKubelet
from sedna.runtime.clock import FakeClock
from sedna.runtime.kube import NODES, PODS, KubeClient

from .helpers import wait_for

LABEL = "incrementallearningjob.sedna.io/worker-type"


@pytest.fixture()
def kube(api_client: kubernetes.client.ApiClient) -> KubeClient:
    return KubeClient(api_client, pool_size=None)


class Harness:
    def __init__(self, kube: KubeClient, namespace: str, node: str, tmp: Path) -> None:
        self.kube = kube
        self.ns = namespace
        self.node = node
        self.clock = FakeClock()
        self.reports: list[str] = []
        self.kubelet = SimulatedKubelet(
            node,
            kube,
            pod_start_seconds=1.0,
            pod_run_seconds=3.0,
            on_worker_finished=self._report,
            log_dir=tmp / "logs",
            clock=self.clock,
        )

    def _report(self, pod: Any) -> None:
        # The worker's report must come while the pod still runs, as on a real node.
        live = self.kube.resource(PODS).get(self.ns, pod["metadata"]["name"])
        self.reports.append(f"{pod['metadata']['name']}:{live['status']['phase']}")

    def create(
        self,
        name: str,
        *,
        node: str | None = "",
        worker: str = "train",
        policy: str = "OnFailure",
        annotations: dict[str, str] | None = None,
        command: list[str] | None = None,
        node_selector: str | None = None,
    ) -> None:
        spec: dict[str, Any] = {
            "restartPolicy": policy,
            "containers": [{"name": "c", "image": "example:1", "command": command or []}],
        }
        if node is not None:
            spec["nodeName"] = node or self.node
        if node_selector:
            spec["nodeSelector"] = {"kubernetes.io/hostname": node_selector}
        self.kube.resource(PODS).create(self.ns, {
            "metadata": {"name": name, "labels": {LABEL: worker},
                         "annotations": annotations or {}},
            "spec": spec,
        })  # fmt: skip

    def phase(self, name: str) -> str:
        return str(self.kube.resource(PODS).get(self.ns, name)["status"]["phase"])

    def wait_phase(self, name: str, phase: str) -> dict[str, Any]:
        """Wait for the kubelet's phase (the server itself already defaults to Pending)."""

        def probe() -> dict[str, Any] | None:
            pod = self.kube.resource(PODS).get(self.ns, name)
            status = pod.get("status") or {}
            return pod if status.get("phase") == phase and status.get("hostIP") else None

        return wait_for(probe, f"pod {name} {phase}")

    def step(self, seconds: float, *, due: bool = True) -> None:
        # With something due, step only once the kubelet waits for it on the clock.
        if due:
            wait_for(self.clock.has_waiters, "the kubelet to wait on its clock")
        self.clock.step(seconds)


@pytest.fixture()
def harness(kube: KubeClient, namespace: str, tmp_path: Path) -> Iterator[Harness]:
    # A node per test: the kubelets of earlier tests must not see this test's pods.
    h = Harness(kube, namespace, f"sim-{namespace}", tmp_path)
    h.kubelet.start()
    try:
        yield h
    finally:
        h.kubelet.stop()


def test_registers_a_ready_node(harness: Harness) -> None:
    node = harness.kube.resource(NODES).get(None, harness.node)
    ready = {c["type"]: c["status"] for c in node["status"]["conditions"]}
    assert ready == {"Ready": "True"}
    assert {"type": "InternalIP", "address": "127.0.0.1"} in node["status"]["addresses"]
    harness.kubelet.register_node()  # a restart re-registers without error


def test_a_registered_node_is_never_seen_without_conditions(harness: Harness) -> None:
    """The first version of the Node a watcher sees already says Ready (as a kubelet
    registers with its status), so no reader has to wait for a second write."""
    nodes = harness.kube.resource(NODES)
    nodes.delete(None, harness.node)
    rv = nodes.list()["metadata"]["resourceVersion"]
    harness.kubelet.register_node()
    with nodes.watch(resource_version=rv, field_selector=f"metadata.name={harness.node}") as w:
        first = next(e for e in w if e["type"] != "BOOKMARK")
    assert first["type"] == "ADDED"
    conditions = first["object"]["status"]["conditions"]
    assert {c["type"]: c["status"] for c in conditions} == {"Ready": "True"}


def test_train_worker_runs_to_completion_and_reports_first(harness: Harness) -> None:
    harness.create("train-1")
    pending = harness.wait_phase("train-1", "Pending")
    assert pending["status"]["hostIP"] == "127.0.0.1"
    assert pending["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == (
        "ContainerCreating"
    )
    harness.step(1.0)
    running = harness.wait_phase("train-1", "Running")
    assert running["status"]["containerStatuses"][0]["ready"] is True
    assert {c["type"]: c["status"] for c in running["status"]["conditions"]}["Ready"] == "True"
    harness.step(3.0)
    done = harness.wait_phase("train-1", "Succeeded")
    term = done["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (0, "Completed")
    assert harness.reports == ["train-1:Running"]


def test_inference_worker_keeps_running(harness: Harness) -> None:
    harness.create("infer-1", worker="inference", policy="Always")
    harness.wait_phase("infer-1", "Pending")
    harness.step(1.0)
    harness.wait_phase("infer-1", "Running")
    harness.step(60.0, due=False)
    harness.create("probe", worker="eval")  # a later event, handled in order
    harness.wait_phase("probe", "Pending")
    assert harness.phase("infer-1") == "Running"
    assert harness.reports == []


def test_pods_of_other_nodes_are_left_alone(harness: Harness) -> None:
    harness.create("elsewhere", node="other-node")
    harness.create("mine")
    harness.wait_phase("mine", "Pending")
    assert "hostIP" not in harness.kube.resource(PODS).get(harness.ns, "elsewhere")["status"]


def test_unbound_pod_naming_the_node_is_bound(harness: Harness) -> None:
    harness.create("picky", node=None, node_selector=harness.node)
    pod = harness.wait_phase("picky", "Pending")
    assert pod["spec"]["nodeName"] == harness.node


@pytest.mark.parametrize(("code", "phase"), [(0, "Succeeded"), (3, "Failed")])
def test_opt_in_runs_the_command(harness: Harness, code: int, phase: str) -> None:
    harness.create(
        f"real-{code}",
        annotations={SIMULATE_RUN_ANNOTATION: "true"},
        command=[sys.executable, "-c", f"print('hello'); raise SystemExit({code})"],
    )
    harness.wait_phase(f"real-{code}", "Pending")
    harness.step(1.0)
    if code == 0:  # reported at exit, marked Succeeded a moment later
        wait_for(lambda: harness.reports, "the worker's report")
        harness.step(0.5)
    pod = harness.wait_phase(f"real-{code}", phase)
    term = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert term["exitCode"] == code
    assert harness.reports == ([f"real-{code}:Running"] if code == 0 else [])
    log = harness.kubelet.log_dir / f"{harness.ns}_real-{code}_c.log"  # type: ignore[operator]
    assert log.read_text().strip() == "hello"


def test_a_simulated_container_logs_its_start_and_exit(harness: Harness) -> None:
    """What `kubectl logs` shows for a container the kubelet only pretends to run."""
    harness.create("train-log")
    harness.wait_phase("train-log", "Pending")
    harness.step(1.0)
    harness.wait_phase("train-log", "Running")
    log = harness.kubelet.log_dir / f"{harness.ns}_train-log_c.log"  # type: ignore[operator]
    assert "container c started; image example:1 is not run" in log.read_text()
    harness.step(3.0)
    harness.wait_phase("train-log", "Succeeded")
    assert log.read_text().splitlines()[-1].endswith("container c exited with code 0")


def test_deleted_pod_is_forgotten_and_its_process_killed(harness: Harness) -> None:
    harness.create(
        "sleeper",
        annotations={SIMULATE_RUN_ANNOTATION: "true"},
        command=[sys.executable, "-c", "import time; time.sleep(60)"],
    )
    harness.wait_phase("sleeper", "Pending")
    harness.step(1.0)
    harness.wait_phase("sleeper", "Running")
    tracked = next(iter(harness.kubelet._tracked.values()))
    proc = wait_for(lambda: tracked.process, "the process to start")
    harness.kube.resource(PODS).delete(harness.ns, "sleeper")
    wait_for(lambda: proc.poll() is not None, "the process to be killed")


def test_a_deleted_pods_logs_are_removed(harness: Harness) -> None:
    """A kubelet removes a deleted pod's container logs; other pods' logs stay."""
    assert harness.kubelet.log_dir is not None
    for name in ("gone", "kept"):
        harness.create(name)
        harness.wait_phase(name, "Pending")
    harness.step(1.0)
    for name in ("gone", "kept"):
        harness.wait_phase(name, "Running")
    harness.step(3.0)
    harness.wait_phase("gone", "Succeeded")
    harness.wait_phase("kept", "Succeeded")
    gone = harness.kubelet.log_dir / f"{harness.ns}_gone_c.log"
    kept = harness.kubelet.log_dir / f"{harness.ns}_kept_c.log"
    assert gone.exists() and kept.exists()
    harness.kube.resource(PODS).delete(harness.ns, "gone")
    wait_for(lambda: not gone.exists(), "the deleted pod's log to be removed")
    assert kept.exists()


def test_every_container_log_of_a_deleted_pod_goes(harness: Harness) -> None:
    """Init containers' logs too; the kubelet's only handle is the pod it is told of."""
    assert harness.kubelet.log_dir is not None
    pods = harness.kube.resource(PODS)
    pods.create(harness.ns, {
        "metadata": {"name": "multi", "labels": {LABEL: "train"}},
        "spec": {"nodeName": harness.node, "initContainers": [{"name": "i", "image": "x"}],
                 "containers": [{"name": "c", "image": "x"}]},
    })  # fmt: skip
    harness.wait_phase("multi", "Pending")
    harness.kubelet.log_dir.mkdir(parents=True, exist_ok=True)
    files = [harness.kubelet.log_dir / f"{harness.ns}_multi_{c}.log" for c in ("i", "c")]
    for f in files:
        f.write_text("line\n")
    other = harness.kubelet.log_dir / f"{harness.ns}_multi-2_c.log"  # a prefix, not the pod
    other.write_text("line\n")
    pods.delete(harness.ns, "multi")
    wait_for(lambda: not any(f.exists() for f in files), "both logs to be removed")
    assert other.exists()


@pytest.mark.parametrize(("ran", "reports"), [(100.0, False), (1.0, True)])
def test_resumed_worker_reports_only_if_its_report_was_not_due(
    kube: KubeClient, namespace: str, tmp_path: Path, ran: float, reports: bool
) -> None:
    """After a GM restart a Running worker finishes; one past its report time stays quiet."""
    h = Harness(kube, namespace, f"sim-{namespace}", tmp_path)
    h.create("resumed")
    started = (h.clock.wall() - timedelta(seconds=ran)).strftime("%Y-%m-%dT%H:%M:%SZ")
    running = {"running": {"startedAt": started}}
    kube.resource(PODS).patch(namespace, "resumed", {"status": {
        "phase": "Running", "hostIP": "127.0.0.1", "startTime": started,
        "containerStatuses": [{"name": "c", "image": "example:1", "ready": True,
                               "restartCount": 0, "state": running}],
    }}, subresource="status")  # fmt: skip
    h.kubelet.start()
    try:
        if reports:
            h.step(2.0)  # past both the report and the exit (timestamps are whole seconds)
        h.wait_phase("resumed", "Succeeded")
        assert h.reports == (["resumed:Running"] if reports else [])
    finally:
        h.kubelet.stop()
