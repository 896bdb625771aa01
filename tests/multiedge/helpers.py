"""The multi-edge tests' pieces: the real Manager with the five plugins, the API view.

There is no Deployment controller and no kubelet here: a test plays them through the
API (`Api.deployment_available`, `Api.set_phase`), as a cluster's would write status.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import kubernetes
import sedna_feature_extraction.plugin as fe_plugin
import sedna_object_search.plugin as os_plugin
import sedna_object_tracking.plugin as ot_plugin
import sedna_reid.plugin as reid_plugin
import sedna_video_analytics.plugin as va_plugin
from support.api import ApiBase
from support.gm import GMHarness
from support.lc import LCBase
from support.samples import load_sample
from support.waiting import wait_until

from sedna.runtime import DEPLOYMENTS, SERVICES, Clock, Resource, sedna_resource

PLUGINS: dict[str, object] = {
    os_plugin.FEATURE_NAME: os_plugin,
    ot_plugin.FEATURE_NAME: ot_plugin,
    fe_plugin.FEATURE_NAME: fe_plugin,
    reid_plugin.FEATURE_NAME: reid_plugin,
    va_plugin.FEATURE_NAME: va_plugin,
}

RESOURCES: dict[str, Resource] = {
    "ObjectSearchService": sedna_resource("objectsearchservices"),
    "ObjectTrackingService": sedna_resource("objecttrackingservices"),
    "FeatureExtractionService": sedna_resource("featureextractionservices"),
    "ReidJob": sedna_resource("reidjobs"),
    "VideoAnalyticsJob": sedna_resource("videoanalyticsjobs"),
}

__all__ = ["wait_until"]


def sample(ref: Path, file: str) -> dict[str, Any]:
    """A Sedna sample as it is, in the test's namespace."""
    obj = load_sample(ref, file)
    obj["metadata"].pop("namespace", None)
    return obj


def fixed_sample(ref: Path, file: str) -> dict[str, Any]:
    """A Sedna sample with what a real API server would refuse made valid: env values
    quoted as strings, container names lowercased."""
    obj = sample(ref, file)

    def fix(template: dict[str, Any]) -> None:
        for c in template["spec"]["containers"]:
            c["name"] = c["name"].lower()
            for e in c.get("env") or []:
                if isinstance(e.get("value"), list):
                    e["value"] = ",".join(str(v) for v in e["value"])

    spec = obj["spec"]
    for w in spec.get("trackingWorkers") or []:
        fix(w["template"])
    if "userWorker" in spec:
        fix(spec["userWorker"]["template"])
    fix(spec["reidWorkers"]["template"])
    return obj


def container(name: str = "worker", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": f"example/{name}:v1", **extra}


def template(name: str = "worker", **spec: Any) -> dict[str, Any]:
    return {"spec": {"containers": [container(name)], **spec}}


def feature_extraction(name: str = "fe-demo", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": {"name": "fe-model"},
        "replicas": 2,
        "selector": {"matchLabels": {"app": "fe"}},
        "template": template("fe", nodeName="edge0"),
    }
    body.update(spec)
    return {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "FeatureExtractionService",
        "metadata": {"name": name},
        "spec": body,
    }


def reid_job(name: str = "reid-demo", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"template": template("reid", nodeName="edge0", restartPolicy="Never")}
    body.update(spec)
    return {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "ReidJob",
        "metadata": {"name": name},
        "spec": body,
    }


def video_analytics_job(name: str = "va-demo", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": {"name": "va-model"},
        "template": template("va", nodeName="edge0", restartPolicy="Never"),
    }
    body.update(spec)
    return {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "VideoAnalyticsJob",
        "metadata": {"name": name},
        "spec": body,
    }


def model(name: str, url: str = "s3://models/m.pth", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "Model",
        "metadata": {"name": name},
        "spec": {"url": url, "format": "pth", **spec},
    }


def env_of(pod_spec: Mapping[str, Any], container_index: int = 0) -> dict[str, Any]:
    return {
        e["name"]: e.get("value", e.get("valueFrom"))
        for e in pod_spec["containers"][container_index].get("env") or []
    }


class Api(ApiBase):
    """Raw access to the test namespace, plus stand-ins for a Deployment controller and
    a kubelet (status writes through the API)."""

    subject = ""

    def __init__(self, api_client: kubernetes.client.ApiClient, namespace: str) -> None:
        super().__init__(api_client, namespace)
        self.deployments = self.kube.resource(DEPLOYMENTS)
        self.services = self.kube.resource(SERVICES)
        self.owners = {kind: self.kube.resource(r) for kind, r in RESOURCES.items()}

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        client = self.owners.get(str(obj["kind"]))
        if client is not None:
            return client.create(self.ns, obj)
        return super().create(obj)

    def owner(self, kind: str, name: str) -> dict[str, Any]:
        return self.owners[kind].get(self.ns, name)

    def status(self, kind: str, name: str) -> dict[str, Any]:
        return dict(self.owner(kind, name).get("status") or {})

    def wait_status(
        self, kind: str, name: str, pred: Callable[[dict[str, Any]], Any], what: str
    ) -> dict[str, Any]:
        found = wait_until(
            lambda: (s := self.status(kind, name)) and pred(s) and s, 10.0, f"{kind} {name}: {what}"
        )
        assert isinstance(found, dict)
        return found

    def condition(self, kind: str, name: str) -> str:
        conds = self.status(kind, name).get("conditions") or []
        return str(conds[-1]["type"]) if conds else ""

    def wait_condition(self, kind: str, name: str, ctype: str) -> dict[str, Any]:
        return self.wait_status(
            kind,
            name,
            lambda s: (s.get("conditions") or [{}])[-1].get("type") == ctype,
            f"condition {ctype}",
        )

    def pods_of(self, owner_name: str, worker_type: str | None = None) -> list[dict[str, Any]]:
        items = self.pods.list(self.ns)["items"]
        out = []
        for p in items:
            labels = p["metadata"].get("labels") or {}
            if not any(k.endswith("/name") and v == owner_name for k, v in labels.items()):
                continue
            if worker_type and not any(
                k.endswith("/worker-type") and v == worker_type for k, v in labels.items()
            ):
                continue
            if p["metadata"].get("deletionTimestamp"):
                continue
            out.append(p)
        return sorted(out, key=lambda p: p["metadata"]["name"])

    def wait_pods(
        self, owner_name: str, count: int, worker_type: str | None = None
    ) -> list[dict[str, Any]]:
        found = wait_until(
            lambda: len(p := self.pods_of(owner_name, worker_type)) == count and p,
            10.0,
            f"{count} pod(s) of {owner_name} {worker_type or ''}",
        )
        assert isinstance(found, list)
        return found

    def deployment(self, name: str) -> dict[str, Any]:
        return self.deployments.get(self.ns, name)

    def wait_deployment(self, name: str) -> dict[str, Any]:
        found = wait_until(lambda: self._maybe(self.deployments, name), 10.0, f"deployment {name}")
        assert isinstance(found, dict)
        return found

    def wait_service(self, name: str) -> dict[str, Any]:
        found = wait_until(lambda: self._maybe(self.services, name), 10.0, f"service {name}")
        assert isinstance(found, dict)
        return found

    def _maybe(self, client: Any, name: str) -> dict[str, Any] | None:
        try:
            return dict(client.get(self.ns, name))
        except Exception:
            return None

    # -- stand-ins -------------------------------------------------------------------

    def deployment_available(self, name: str, ready: bool = True) -> None:
        """What a Deployment controller writes once its pods are available (or failed)."""
        dep = self.deployment(name)
        replicas = int(dep["spec"].get("replicas") or 1)
        if ready:
            conditions = [
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
            ]
            counts = {
                "replicas": replicas,
                "availableReplicas": replicas,
                "readyReplicas": replicas,
            }
        else:
            conditions = [
                {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable"},
                {
                    "type": "Progressing",
                    "status": "False",
                    "reason": "ProgressDeadlineExceeded",
                    "message": "ReplicaSet has timed out progressing.",
                },
            ]
            counts = {"replicas": replicas, "availableReplicas": 0, "unavailableReplicas": replicas}
        status = {
            "observedGeneration": dep["metadata"].get("generation", 1),
            "conditions": conditions,
            **counts,
        }
        self.deployments.patch(self.ns, name, {"status": status}, subresource="status")

    def set_phase(self, pod: Mapping[str, Any], phase: str, node: str | None = None) -> None:
        """What a kubelet writes: the pod's phase (and its node, as a scheduler binds)."""
        name = pod["metadata"]["name"]
        if node is not None:
            fresh = self.pods.get(self.ns, name)
            fresh["spec"]["nodeName"] = node
            self.pods.replace(self.ns, name, fresh)
        body: dict[str, Any] = {"status": {"phase": phase}}
        if phase == "Failed":
            body["status"]["reason"] = "Error"
        self.pods.patch(self.ns, name, body, subresource="status")

    def run_all(self, owner_name: str, node: str | None = None) -> None:
        for p in self.pods_of(owner_name):
            self.set_phase(p, "Running", node)

    def event_reasons(self, name: str) -> list[tuple[str, str, str]]:
        return [
            (e.get("type", ""), e["reason"], e.get("message", "")) for e in self.events_of(name)
        ]

    def wait_event_on(self, name: str, reason: str, contains: str = "") -> str:
        return self.wait_event(reason, contains, name=name)


class TestLC(LCBase):
    """One edge node's LocalController, forwarding its workers' reports."""

    def report(self, namespace: str, kind: str, name: str, payload: Any) -> None:
        self.send_status(namespace, kind, name, payload)


class GM(GMHarness):
    """The real Manager with the multi-edge features (all five unless told), namespaced."""

    def __init__(
        self,
        api_client_factory: Callable[[], kubernetes.client.ApiClient],
        namespace: str,
        *,
        features: Sequence[str] = tuple(PLUGINS),
        clock: Clock | None = None,
    ) -> None:
        super().__init__(
            api_client_factory,
            namespace,
            features={name: {"workers": 1} for name in features},
            plugins={name: PLUGINS[name] for name in features},
            clock=clock,
        )


def deep(obj: Any) -> Any:
    return copy.deepcopy(obj)
