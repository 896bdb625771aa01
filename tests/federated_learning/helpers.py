"""Shared pieces of the federated-learning tests: the GM, a test LC, the kubelet's part.

The GM is the real `sedna.manager.Manager` with the plugin, talking to the in-process
API server over HTTP; the LC is a websocket client speaking Sedna's wire protocol; the
kubelet is the test itself, patching pod status as a kubelet would.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import kubernetes
import sedna_federated_learning.plugin as fl_plugin
from support.api import ApiBase
from support.gm import GMHarness
from support.lc import LCBase, Received
from support.logs import LogCapture
from support.samples import load_sample
from support.waiting import wait_until

from sedna.runtime import SERVICES, AlreadyExists, Clock, sedna_resource

__all__ = ["LogCapture", "Received", "load_sample", "wait_until"]  # re-exported for the tests

LABEL = "federatedlearningjob.sedna.io/"
JOB = "surface-defect-detection"
MODEL = "surface-defect-detection-model"
DATASETS = ("edge1-surface-defect-detection-dataset", "edge2-surface-defect-detection-dataset")
NODES = ("edge1", "edge2")  # the v1alpha1 sample's training nodes
FL_JOBS = sedna_resource("federatedlearningjobs")
WORKER = "sedna-gm.io/fl-worker"


def model(name: str = MODEL, url: str = "/model") -> dict[str, Any]:
    return {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "Model",
        "metadata": {"name": name},
        "spec": {"url": url, "format": "ckpt"},
    }


def dataset(name: str, node: str) -> dict[str, Any]:
    return {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "Dataset",
        "metadata": {"name": name},
        "spec": {"url": f"/data/{name}.txt", "format": "txt", "nodeName": node},
    }


def sample_job(ref: Path, file: str = "federatedlearningjob_v1alpha1.yaml") -> dict[str, Any]:
    return load_sample(ref, file)


# -- the API -------------------------------------------------------------------------


class Api(ApiBase):
    """Raw access to the test namespace (the test's view of the cluster)."""

    subject = JOB

    def __init__(self, api_client: kubernetes.client.ApiClient, namespace: str) -> None:
        super().__init__(api_client, namespace)
        self.fl = self.kube.resource(FL_JOBS)
        self.services = self.kube.resource(SERVICES)

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        if obj["kind"] == "FederatedLearningJob":
            return self.fl.create(self.ns, obj)
        return super().create(obj)

    def inputs(self, job: Mapping[str, Any]) -> None:
        """The Models and Datasets `job` names."""
        spec = job["spec"]
        self.create(model(spec["aggregationWorker"]["model"]["name"]))
        if spec.get("pretrainedModel"):
            self.create(model(spec["pretrainedModel"]["name"], "/pretrained"))
        for w in spec["trainingWorkers"]:
            name = w["dataset"]["name"]
            with contextlib.suppress(AlreadyExists):  # two workers may share one dataset
                self.create(dataset(name, w["template"]["spec"].get("nodeName", "")))

    def job(self, name: str = JOB) -> dict[str, Any]:
        return self.fl.get(self.ns, name)

    def status(self, name: str = JOB) -> dict[str, Any]:
        return dict(self.job(name).get("status") or {})

    def phase(self, name: str = JOB) -> str:
        return str(self.status(name).get("phase") or "")

    def conditions(self, name: str = JOB) -> list[dict[str, Any]]:
        return list(self.status(name).get("conditions") or [])

    def wait_phase(self, phase: str, name: str = JOB, timeout: float = 5.0) -> None:
        wait_until(
            lambda: self.phase(name) == phase,
            timeout,
            f"{name} in phase {phase} ({self.phase(name)})",
        )

    def all_pods(self, name: str = JOB) -> list[dict[str, Any]]:
        items = self.pods.list(self.ns, label_selector=f"{LABEL}name={name}")["items"]
        return sorted(items, key=lambda p: p["metadata"]["creationTimestamp"])

    def live_pods(self, name: str = JOB) -> list[dict[str, Any]]:
        return [p for p in self.all_pods(name) if not p["metadata"].get("deletionTimestamp")]

    def workers(self, name: str = JOB) -> dict[str, dict[str, Any]]:
        """The live pods by the worker they are; a duplicate fails the test."""
        out: dict[str, dict[str, Any]] = {}
        for p in self.live_pods(name):
            slot = p["metadata"]["annotations"][WORKER]
            assert slot not in out, f"two pods for worker {slot}"
            out[slot] = p
        return out

    def wait_workers(self, count: int, name: str = JOB) -> dict[str, dict[str, Any]]:
        wait_until(lambda: len(self.live_pods(name)) == count, 5.0, f"{count} pods of {name}")
        return self.workers(name)

    def set_phase(self, pod: str, phase: str) -> None:
        """The kubelet's part: report the pod's phase."""
        self.pods.patch(self.ns, pod, {"status": {"phase": phase}}, subresource="status")

    def set_all(self, phase: str, name: str = JOB) -> None:
        for p in self.live_pods(name):
            self.set_phase(p["metadata"]["name"], phase)

    def event_list(self, name: str = JOB) -> list[tuple[str, str, str]]:
        return [
            (e.get("type", ""), e["reason"], e.get("message", "")) for e in self.events_of(name)
        ]


def env_of(pod: Mapping[str, Any]) -> dict[str, str]:
    container = pod["spec"]["containers"][0]
    return {e["name"]: e.get("value", "") for e in container.get("env") or []}


# -- the LC --------------------------------------------------------------------------


class TestLC(LCBase):
    """One edge node's LocalController: collects what the GM sends, sends reports."""

    strict_base64 = True

    def messages(self, operation: str | None = None, name: str | None = None) -> list[Received]:
        return self.select("federatedlearningjob", operation, name)

    def wait_for(
        self,
        operation: str,
        name: str = JOB,
        pred: Callable[[Received], bool] = lambda m: True,
        timeout: float = 5.0,
    ) -> Received:
        return self.await_message("federatedlearningjob", operation, name, pred, timeout)

    def report(self, namespace: str, payload: Any, name: str = JOB) -> None:
        """A status report as the Go LC's federated-learning manager writes it."""
        self.send_status(namespace, "FederatedLearningJob", name, payload)

    def report_round(
        self, namespace: str, current_round: int, metrics: Mapping[str, Any] | None = None
    ) -> None:
        models = (
            [{"format": "pb", "url": "/model/x.pb", "metrics": dict(metrics)}] if metrics else []
        )
        self.report(
            namespace,
            {
                "phase": "train",
                "status": "running",
                "output": {
                    "models": models,
                    "ownerInfo": {
                        "currentRound": current_round,
                        "updateTime": f"2026-12-01T10:00:0{current_round % 10}Z",
                    },
                },
            },
        )


# -- the GM --------------------------------------------------------------------------


class GM(GMHarness):
    """The real Manager with the federated-learning feature only, scoped to the namespace."""

    def __init__(
        self,
        api_client_factory: Callable[[], kubernetes.client.ApiClient],
        namespace: str,
        *,
        options: Mapping[str, Any] | None = None,
        workers: int = 1,
        clock: Clock | None = None,
        websocket: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            api_client_factory,
            namespace,
            features={fl_plugin.FEATURE_NAME: {"workers": workers, **dict(options or {})}},
            plugins={fl_plugin.FEATURE_NAME: fl_plugin},
            websocket=websocket,
            clock=clock,
        )

    @property
    def controller(self) -> Any:
        assert self.manager is not None
        (feature,) = self.manager.features
        return feature.controller


def started_job(
    api: Api, make_gm: Callable[..., GM], ref: Path, **gm: Any
) -> tuple[GM, dict[str, Any]]:
    """The v1alpha1 sample with its inputs, a GM, and the job's three pods created."""
    job = sample_job(ref)
    api.inputs(job)
    g = make_gm(**gm)
    api.create(copy.deepcopy(job))
    api.wait_workers(3)
    return g, job
