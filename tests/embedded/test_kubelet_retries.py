"""The simulated kubelet retries a status write that failed, so its pods go on.

After SIGSTOP and SIGCONT its first write went out on a pooled connection the server
had closed meanwhile; the write failed and was never retried, and the pod (and its
job) stalled in the phase before. Here the server's fault injector fails the writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import kubernetes
import pytest

from sedna.embedded.apiserver import APIServer
from sedna.embedded.kubelet import WRITE_RETRY_MAX_SECONDS, SimulatedKubelet
from sedna.runtime.clock import FakeClock
from sedna.runtime.kube import PODS, KubeClient
from sedna.testing import wait_until

NODE = "retry-node"


class Node:
    def __init__(self, srv: APIServer) -> None:
        self.srv = srv
        self.api = kubernetes.client.ApiClient(srv.client_configuration())
        self.kube = KubeClient(self.api, pool_size=None)
        self.clock = FakeClock()
        self.kubelet = SimulatedKubelet(
            NODE, self.kube, pod_start_seconds=1.0, pod_run_seconds=3.0, clock=self.clock
        )

    def create(self, name: str) -> None:
        self.kube.resource(PODS).create("default", {
            "metadata": {"name": name},
            "spec": {"nodeName": NODE, "restartPolicy": "Never",
                     "containers": [{"name": "c", "image": "example:1"}]},
        })  # fmt: skip

    def phase(self, name: str) -> str:
        pod: dict[str, Any] = self.kube.resource(PODS).get("default", name)
        return str((pod.get("status") or {}).get("phase") or "")

    def run_until(self, name: str, phase: str, steps: int = 60) -> bool:
        """Step virtual time (0.5 s at a time, whenever the kubelet waits) until `phase`."""
        for _ in range(steps):
            wait_until(
                lambda: self.phase(name) == phase or self.clock.has_waiters(),
                timeout=10,
                what="the kubelet to wait",
            )
            if self.phase(name) == phase:
                return True
            self.clock.step(0.5)
        return self.phase(name) == phase


@pytest.fixture()
def node() -> Iterator[Node]:
    srv = APIServer()
    srv.start()
    n = Node(srv)
    n.kubelet.start()
    try:
        yield n
    finally:
        n.kubelet.stop()
        n.api.close()
        srv.stop()


def test_failed_status_writes_are_retried_and_the_pod_runs_to_the_end(node: Node) -> None:
    # the Pending and the Running writes fail once each, then twice more
    node.srv.faults.fail(503, verbs=("patch",), resources=("pods/status",), count=4)
    node.create("stalled")
    assert node.run_until("stalled", "Running")
    assert node.run_until("stalled", "Succeeded")


def test_a_lost_connection_is_retried(node: Node) -> None:
    # the write is carried out but its answer lost, as on a connection cut mid-request
    node.srv.faults.lose_responses(504, verbs=("patch",), resources=("pods/status",), count=3)
    node.create("lost")
    assert node.run_until("lost", "Succeeded")


def test_retries_go_on_at_a_bounded_pace_until_the_write_lands(node: Node) -> None:
    """A full disk refuses writes for as long as it lasts: the kubelet keeps trying, at
    most once per `WRITE_RETRY_MAX_SECONDS`, and the pod goes on once a write lands."""
    rule = node.srv.faults.fail(500, verbs=("patch",), resources=("pods/status",))
    node.create("held")
    wait_until(lambda: rule.seen >= 1, timeout=10, what="the first write")
    for _ in range(240):  # 120 s of virtual time
        wait_until(node.clock.has_waiters, timeout=10, what="the next retry to wait")
        node.clock.step(0.5)
    tries = rule.seen
    # 0.2 s doubling to the cap, then one try per cap
    assert 120 / WRITE_RETRY_MAX_SECONDS <= tries <= 120 / WRITE_RETRY_MAX_SECONDS + 8
    assert node.phase("held") in ("", "Pending")
    node.srv.faults.reset()
    assert node.run_until("held", "Succeeded")
