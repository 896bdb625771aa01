"""The embedded Deployment controller: pods, rollouts and status, over HTTP, as a cluster's.

The test plays the kubelet (it writes the pods' status), so every step is its own.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import kubernetes
import pytest
from apiserver.test_kubectl import Kubectl
from apiserver.test_kubectl import kubectl as kubectl
from support.deployments import DeploymentControllerFactory

from sedna.embedded.deployments import HASH_LABEL, pod_template_hash
from sedna.runtime.clock import FakeClock
from sedna.runtime.kube import DEPLOYMENTS, PODS, KubeClient, NotFound

from .helpers import wait_for


@pytest.fixture()
def kube(api_client: kubernetes.client.ApiClient) -> KubeClient:
    return KubeClient(api_client, pool_size=None)


def deployment(name: str = "web", replicas: int | None = 2, image: str = "web:1") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}, "annotations": {"a": "1"}},
            "spec": {"containers": [{"name": "c", "image": image}]},
        },
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": spec}


class World:
    def __init__(self, kube: KubeClient, ns: str) -> None:
        self.ns = ns
        self.deps = kube.resource(DEPLOYMENTS)
        self.pods = kube.resource(PODS)

    def live_pods(self, name: str = "web") -> list[dict[str, Any]]:
        uid = self.deps.get(self.ns, name)["metadata"]["uid"]
        return sorted(
            (
                p
                for p in self.pods.list(self.ns)["items"]
                if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [])
            ),
            key=lambda p: p["metadata"]["name"],
        )

    def wait_pods(
        self, n: int, name: str = "web", image: str | None = None
    ) -> list[dict[str, Any]]:
        def probe() -> list[dict[str, Any]] | None:
            pods = self.live_pods(name)
            if image is not None:
                pods = [p for p in pods if p["spec"]["containers"][0]["image"] == image]
            return pods if len(pods) == n and len(self.live_pods(name)) == n else None

        return wait_for(probe, f"{n} pods of {name}" + (f" with {image}" if image else ""))

    def set_phase(self, pod: dict[str, Any], phase: str) -> None:
        ready = "True" if phase == "Running" else "False"
        self.pods.patch(
            self.ns,
            pod["metadata"]["name"],
            {"status": {"phase": phase, "conditions": [{"type": "Ready", "status": ready}]}},
            subresource="status",
        )

    def status(self, name: str = "web") -> dict[str, Any]:
        return dict(self.deps.get(self.ns, name).get("status") or {})

    def conditions(self, name: str = "web") -> dict[str, tuple[str, str]]:
        return {
            c["type"]: (c["status"], c["reason"]) for c in self.status(name).get("conditions") or []
        }


@pytest.fixture()
def world(kube: KubeClient, namespace: str) -> World:
    return World(kube, namespace)


def test_pods_owned_with_labels_and_status_until_available(
    world: World, deployment_controller: DeploymentControllerFactory
) -> None:
    deployment_controller()
    dep = world.deps.create(world.ns, deployment())
    pods = world.wait_pods(2)
    thash = pod_template_hash(dep["spec"]["template"])
    for p in pods:
        meta = p["metadata"]
        assert meta["name"].startswith(f"web-{thash}-")
        assert meta["labels"] == {"app": "web", HASH_LABEL: thash}
        assert meta["annotations"] == {"a": "1"}
        (ref,) = meta["ownerReferences"]
        assert ref == {
            "apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
            "uid": dep["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True,
        }  # fmt: skip
        assert p["spec"]["containers"][0]["image"] == "web:1"
    wait_for(
        lambda: (
            world.conditions()
            == {
                "Available": ("False", "MinimumReplicasUnavailable"),
                "Progressing": ("True", "ReplicaSetUpdated"),
            }
            and world.status().get("updatedReplicas") == 2
        ),
        "progressing status with both pods counted",
    )
    for p in pods:
        world.set_phase(p, "Running")
    wait_for(
        lambda: (
            world.conditions()
            == {
                "Available": ("True", "MinimumReplicasAvailable"),
                "Progressing": ("True", "NewReplicaSetAvailable"),
            }
        ),
        "available status",
    )
    status = world.status()
    assert status["observedGeneration"] == dep["metadata"]["generation"]
    assert (status["replicas"], status["readyReplicas"], status["availableReplicas"]) == (2, 2, 2)
    assert "unavailableReplicas" not in status


def test_default_one_replica_and_scaling(
    world: World, deployment_controller: DeploymentControllerFactory
) -> None:
    deployment_controller()
    world.deps.create(world.ns, deployment(replicas=None))
    world.wait_pods(1)
    world.deps.patch(world.ns, "web", {"spec": {"replicas": 3}})
    world.wait_pods(3)
    world.deps.patch(world.ns, "web", {"spec": {"replicas": 1}})
    world.wait_pods(1)


def test_template_change_rolls_pods_once_the_new_ones_are_ready(
    world: World, deployment_controller: DeploymentControllerFactory
) -> None:
    deployment_controller()
    world.deps.create(world.ns, deployment(replicas=1))
    (old,) = world.wait_pods(1)
    world.set_phase(old, "Running")
    wait_for(
        lambda: world.conditions().get("Available") == ("True", "MinimumReplicasAvailable"), "up"
    )
    world.deps.patch(world.ns, "web", {"spec": {"template": {"spec": {"containers": [
        {"name": "c", "image": "web:2"}]}}}})  # fmt: skip
    pods = world.wait_pods(2)  # surge: the old pod stays until the new one is Ready
    new = next(p for p in pods if p["spec"]["containers"][0]["image"] == "web:2")
    assert world.conditions()["Available"][0] == "True"
    world.set_phase(new, "Running")
    (left,) = world.wait_pods(1, image="web:2")
    assert left["metadata"]["name"] == new["metadata"]["name"]
    wait_for(
        lambda: (
            world.conditions().get("Progressing") == ("True", "NewReplicaSetAvailable")
            and world.status().get("updatedReplicas") == 1
        ),
        "rollout complete",
    )


def test_failed_pod_is_replaced(
    world: World, deployment_controller: DeploymentControllerFactory
) -> None:
    deployment_controller()
    world.deps.create(world.ns, deployment(replicas=1))
    (pod,) = world.wait_pods(1)
    world.set_phase(pod, "Failed")

    def replaced() -> bool:
        pods = world.live_pods()
        return len(pods) == 1 and pods[0]["metadata"]["uid"] != pod["metadata"]["uid"]

    wait_for(replaced, "a replacement pod")


def test_restart_makes_no_second_pod(
    world: World, deployment_controller: DeploymentControllerFactory
) -> None:
    first = deployment_controller()
    world.deps.create(world.ns, deployment(replicas=2))
    before = [p["metadata"]["uid"] for p in world.wait_pods(2)]
    first.stop()
    second = deployment_controller()
    second.enqueue(f"{world.ns}/web")
    assert second.wait_idle(5)
    assert [p["metadata"]["uid"] for p in world.wait_pods(2)] == before


def test_progress_deadline_exceeded_in_virtual_time(
    world: World, deployment_controller: DeploymentControllerFactory
) -> None:
    clock = FakeClock()
    deployment_controller(clock=clock)
    dep = deployment(replicas=1)
    dep["spec"]["progressDeadlineSeconds"] = 60
    world.deps.create(world.ns, dep)
    world.wait_pods(1)
    wait_for(lambda: world.conditions().get("Progressing") == ("True", "ReplicaSetUpdated"), "x")
    wait_for(clock.has_waiters, "the deadline check to wait on the clock")
    clock.step(timedelta(seconds=30).total_seconds())
    assert world.conditions()["Progressing"] == ("True", "ReplicaSetUpdated")
    clock.step(40)
    wait_for(
        lambda: world.conditions().get("Progressing") == ("False", "ProgressDeadlineExceeded"),
        "the deadline",
    )


def test_deleting_the_deployment_deletes_its_pods(
    world: World, deployment_controller: DeploymentControllerFactory
) -> None:
    deployment_controller()
    world.deps.create(world.ns, deployment(replicas=2))
    pods = world.wait_pods(2)
    world.deps.delete(world.ns, "web")

    def gone() -> bool:
        for p in pods:
            try:
                world.pods.get(world.ns, p["metadata"]["name"])
            except NotFound:
                continue
            return False
        return True

    wait_for(gone, "the pods collected")


def test_kubectl_get_deploy_svc_hpa(
    kubectl: Kubectl, world: World, deployment_controller: DeploymentControllerFactory
) -> None:
    deployment_controller()
    world.deps.create(world.ns, deployment(replicas=1))
    (pod,) = world.wait_pods(1)
    world.set_phase(pod, "Running")
    wait_for(lambda: world.status().get("availableReplicas") == 1, "available")
    kubectl("apply", "-f", "-", stdin=SERVICE_AND_HPA)
    out = kubectl("get", "deploy,svc,hpa")
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert any(line.startswith("deployment.apps/web 1/1 1 1 ") for line in lines), out
    assert any(
        line.startswith("service/web ClusterIP ") and "5000/TCP" in line for line in lines
    ), out
    assert any(
        line.startswith("horizontalpodautoscaler.autoscaling/hpa-web Deployment/web ")
        and " 1 3 0 " in line
        for line in lines
    ), out


SERVICE_AND_HPA = """\
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: tcp-0, protocol: TCP, port: 5000, targetPort: 5000}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: hpa-web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 3
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
"""
