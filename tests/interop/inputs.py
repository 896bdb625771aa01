"""The interop tests' inputs: the repository's examples, pointed at one node and at
paths the test owns, and reads of what the GM made of them."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import kubernetes
import yaml

from sedna.testing import wait_until

PROJECT_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = PROJECT_ROOT / "examples"
GROUP, VERSION = "sedna.io", "v1alpha1"
PLURALS = {
    "Dataset": "datasets",
    "Model": "models",
    "IncrementalLearningJob": "incrementallearningjobs",
    "LifelongLearningJob": "lifelonglearningjobs",
    "JointInferenceService": "jointinferenceservices",
    "FederatedLearningJob": "federatedlearningjobs",
    "ObjectSearchService": "objectsearchservices",
    "ObjectTrackingService": "objecttrackingservices",
    "FeatureExtractionService": "featureextractionservices",
    "ReidJob": "reidjobs",
    "VideoAnalyticsJob": "videoanalyticsjobs",
}


def example(folder: str) -> list[dict[str, Any]]:
    """Every object of one example folder, in file order."""
    docs: list[dict[str, Any]] = []
    for path in sorted((EXAMPLES / folder).glob("*.yaml")):
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return docs


def walk(obj: Any) -> Iterator[dict[str, Any]]:
    """Every mapping inside `obj`, itself included."""
    if isinstance(obj, dict):
        yield obj
        for v in obj.values():
            yield from walk(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from walk(v)


def on_node(obj: dict[str, Any], node: str) -> dict[str, Any]:
    """A copy with every `nodeName` set to `node` (pod templates, datasets)."""
    out = copy.deepcopy(obj)
    for m in walk(out):
        if "nodeName" in m:
            m["nodeName"] = node
    return out


class Objects:
    """Sedna's objects of one namespace through the official client."""

    def __init__(self, client: kubernetes.client.ApiClient, ns: str) -> None:
        self.custom = kubernetes.client.CustomObjectsApi(client)
        self.core = kubernetes.client.CoreV1Api(client)
        self.ns = ns

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        plural = PLURALS[obj["kind"]]
        body = copy.deepcopy(obj)
        body["metadata"]["namespace"] = self.ns
        out = self.custom.create_namespaced_custom_object(GROUP, VERSION, self.ns, plural, body)
        return cast(dict[str, Any], out)

    def get(self, kind: str, name: str) -> dict[str, Any]:
        out = self.custom.get_namespaced_custom_object(GROUP, VERSION, self.ns, PLURALS[kind], name)
        return cast(dict[str, Any], out)

    def status(self, kind: str, name: str) -> dict[str, Any]:
        return dict(self.get(kind, name).get("status") or {})

    def states(self, kind: str, name: str) -> list[str]:
        """`<stage>/<type>` of a staged job's conditions, oldest first."""
        conds = self.status(kind, name).get("conditions") or []
        return [f"{c.get('stage')}/{c.get('type')}" for c in conds]

    def pods(self, selector: str) -> list[dict[str, Any]]:
        items = self.core.list_namespaced_pod(self.ns, label_selector=selector).items
        pods = [self.core.api_client.sanitize_for_serialization(p) for p in items]
        return sorted(pods, key=lambda p: p["metadata"]["creationTimestamp"])

    def worker_pods(self, kind: str, name: str, worker_type: str) -> list[dict[str, Any]]:
        label = f"{kind.lower()}.sedna.io"
        return self.pods(f"{label}/name={name},{label}/worker-type={worker_type}")

    def wait_pods(
        self, kind: str, name: str, worker_type: str, count: int, timeout: float
    ) -> list[dict[str, Any]]:
        def enough() -> list[dict[str, Any]] | None:
            pods = self.worker_pods(kind, name, worker_type)
            return pods if len(pods) >= count else None

        found = wait_until(enough, timeout, f"{count} {worker_type} pod(s) of {kind} {name}")
        assert isinstance(found, list)
        return found
