"""The kubelet's part in a test: pods move through their phases when the test says so.

No pod runs; the test decides when a worker is Running, Succeeded or Failed, which is
what a feature's controller reacts to. The status is written through the `pods/status`
subresource, as a kubelet does.
"""

from __future__ import annotations

from typing import Any

import kubernetes

from sedna.runtime import PODS, KubeClient


class Kubelet:
    """Moves the pods of one namespace through phases."""

    __test__ = False

    def __init__(self, api_client: kubernetes.client.ApiClient, namespace: str) -> None:
        self.pods = KubeClient(api_client).resource(PODS)
        self.namespace = namespace

    def list(self, label_selector: str | None = None) -> list[dict[str, Any]]:
        """The namespace's pods, optionally by label selector (`app=x,role=y`)."""
        items = self.pods.list(self.namespace, label_selector=label_selector)["items"]
        return list(items)

    def set_phase(
        self, pod: str, phase: str, *, reason: str = "", node: str = "", exit_code: int = 0
    ) -> dict[str, Any]:
        """Report `phase` for `pod` (Pending, Running, Succeeded, Failed), optionally bound."""
        if node:
            self.pods.patch(self.namespace, pod, {"spec": {"nodeName": node}})
        status: dict[str, Any] = {"phase": phase}
        if reason:
            status["reason"] = reason
        if phase in ("Succeeded", "Failed"):
            current = self.pods.get(self.namespace, pod)
            status["containerStatuses"] = [
                {
                    "name": c.get("name", ""),
                    "ready": False,
                    "restartCount": 0,
                    "image": c.get("image", ""),
                    "imageID": "",
                    "state": {"terminated": {"exitCode": exit_code, "reason": reason or phase}},
                }
                for c in (current.get("spec") or {}).get("containers", [])
            ]
        return self.pods.patch(self.namespace, pod, {"status": status}, subresource="status")

    def run(self, pod: str, node: str = "") -> dict[str, Any]:
        return self.set_phase(pod, "Running", node=node)

    def succeed(self, pod: str) -> dict[str, Any]:
        return self.set_phase(pod, "Succeeded")

    def fail(self, pod: str, reason: str = "Error", exit_code: int = 1) -> dict[str, Any]:
        return self.set_phase(pod, "Failed", reason=reason, exit_code=exit_code)
