"""The joint-inference tests' pieces: the real Manager with the plugin, a test LC, the API view.

The GM is `sedna.manager.Manager` with the `joint_inference` feature, over HTTP to the
in-process API server; the embedded Deployment controller gives the Deployments pods
and status; the test plays the kubelet (`Api.run_pods`); the LC is a websocket client
speaking Sedna's wire protocol, as the Go LC does.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import kubernetes
import sedna_joint_inference.plugin as ji_plugin
from support.api import ApiBase
from support.gm import GMHarness
from support.lc import LCBase, Received
from support.samples import load_sample
from support.waiting import wait_until

from sedna.runtime import DEPLOYMENTS, HPAS, SERVICES, Clock, sedna_resource

__all__ = ["Received", "wait_until"]

JIS = sedna_resource("jointinferenceservices")
SAMPLE = "helmet-detection-inference-example"
NODE = "edge-node"
CLOUD_DEPLOYMENT = f"{SAMPLE}-deployment-cloud"
EDGE_DEPLOYMENT = f"{SAMPLE}-deployment-edge"
CLOUD_SERVICE = f"{SAMPLE}-cloud"
LITTLE = "helmet-detection-inference-little-model"
BIG = "helmet-detection-inference-big-model"


def sample_service(ref: Path) -> dict[str, Any]:
    ji = load_sample(ref, "jointinferenceservice_v1alpha1.yaml")
    ji["metadata"].pop("namespace", None)  # created in the test's namespace
    return ji


def model(name: str, url: str = "s3://kubeedge/models/model.pb") -> dict[str, Any]:
    return {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "Model",
        "metadata": {"name": name},
        "spec": {"url": url, "format": "pb"},
    }


def env_of(dep: Mapping[str, Any]) -> dict[str, str]:
    container = dep["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value", "") for e in container.get("env") or []}


class Api(ApiBase):
    """Raw access to the test namespace (the test's view of the cluster)."""

    subject = SAMPLE

    def __init__(self, api_client: kubernetes.client.ApiClient, namespace: str) -> None:
        super().__init__(api_client, namespace)
        self.jis = self.kube.resource(JIS)
        self.deployments = self.kube.resource(DEPLOYMENTS)
        self.services = self.kube.resource(SERVICES)
        self.hpas = self.kube.resource(HPAS)

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        if obj["kind"] == "JointInferenceService":
            return self.jis.create(self.ns, obj)
        return super().create(obj)

    def create_models(self) -> None:
        for name in (LITTLE, BIG):
            self.models.create(self.ns, model(name))

    def ji(self, name: str = SAMPLE) -> dict[str, Any]:
        return self.jis.get(self.ns, name)

    def status(self, name: str = SAMPLE) -> dict[str, Any]:
        return dict(self.ji(name).get("status") or {})

    def condition_types(self, name: str = SAMPLE) -> list[str]:
        return [c["type"] for c in self.status(name).get("conditions") or []]

    def latest(self, name: str = SAMPLE) -> tuple[str, str]:
        conds = self.status(name).get("conditions") or [{}]
        return str(conds[-1].get("type", "")), str(conds[-1].get("reason", ""))

    def wait_condition(self, ctype: str, name: str = SAMPLE, timeout: float = 10.0) -> None:
        wait_until(lambda: self.latest(name)[0] == ctype, timeout, f"{name} {ctype}")

    def deployment(self, name: str) -> dict[str, Any] | None:
        items = self.deployments.list(self.ns)["items"]
        return next((d for d in items if d["metadata"]["name"] == name), None)

    def wait_deployment(
        self, name: str, pred: Callable[[dict[str, Any]], bool] = lambda d: True
    ) -> dict[str, Any]:
        def probe() -> dict[str, Any] | None:
            d = self.deployment(name)
            return d if d is not None and pred(d) else None

        found: dict[str, Any] = wait_until(probe, 10.0, f"deployment {name}")
        return found

    def names(self, res: str) -> list[str]:
        client = {"deployments": self.deployments, "services": self.services, "hpas": self.hpas,
                  "pods": self.pods}[res]  # fmt: skip
        return sorted(o["metadata"]["name"] for o in client.list(self.ns)["items"])

    def run_pods(self) -> int:
        """Play the kubelet: every pod not yet Running becomes Running and Ready."""
        n = 0
        for p in self.pods.list(self.ns)["items"]:
            if (p.get("status") or {}).get("phase") == "Running":
                continue
            self.pods.patch(
                self.ns,
                p["metadata"]["name"],
                {"status": {"phase": "Running",
                            "conditions": [{"type": "Ready", "status": "True"}]}},
                subresource="status",
            )  # fmt: skip
            n += 1
        return n

    def until_running(self, name: str = SAMPLE, timeout: float = 10.0) -> None:
        """Run pods as they appear until the service is Running."""

        def step() -> bool:
            self.run_pods()
            return self.latest(name)[0] == "Running"

        wait_until(step, timeout, f"{name} Running")

    def event_list(self, name: str = SAMPLE) -> list[tuple[str, str, str]]:
        return [
            (e.get("type", ""), e["reason"], e.get("message", "")) for e in self.events_of(name)
        ]

    def patch_spec(self, patch: Mapping[str, Any], name: str = SAMPLE) -> None:
        self.jis.patch(self.ns, name, {"spec": copy.deepcopy(dict(patch))})


class TestLC(LCBase):
    """One edge node's LocalController: collects what the GM sends, sends reports."""

    def messages(self, operation: str | None = None, name: str | None = None) -> list[Received]:
        return self.select("jointinferenceservice", operation, name)

    def wait_for(
        self,
        operation: str,
        name: str = SAMPLE,
        pred: Callable[[Received], bool] = lambda m: True,
        timeout: float = 5.0,
    ) -> Received:
        return self.await_message("jointinferenceservice", operation, name, pred, timeout)

    def report(self, namespace: str, payload: Any, name: str = SAMPLE) -> None:
        """What the Go LC forwards of the edge worker's message."""
        self.send_status(namespace, "jointinferenceservice", name, payload)


def worker_report(inferences: int, hard: int) -> dict[str, Any]:
    """The Go LC's upstream message for the sedna library's LCReporter post."""
    return {
        "phase": "inference",
        "status": "",
        "output": {
            "ownerInfo": {
                "startTime": "2026-01-01 00:00:00",
                "updateTime": "2026-01-01 00:00:30",
                "inferenceNumber": inferences,
                "hardExampleNumber": hard,
                "uploadCloudRatio": hard / inferences,
            }
        },
    }


class GM(GMHarness):
    """The real Manager with the joint_inference feature only, scoped to the test namespace."""

    def __init__(
        self,
        api_client_factory: Callable[[], kubernetes.client.ApiClient],
        namespace: str,
        *,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(
            api_client_factory,
            namespace,
            features={ji_plugin.FEATURE_NAME: {"workers": 1}},
            plugins={ji_plugin.FEATURE_NAME: ji_plugin},
            clock=clock,
        )
