"""Shared pieces of the lifelong-learning tests: the GM, a Go-protocol test LC, the kubelet.

The GM is the real `sedna.manager.Manager` with the plugin, talking to the in-process
API server over HTTP; the LC is a websocket client speaking Sedna's wire protocol; the
kubelet is the test itself, patching pod status as a kubelet would.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import kubernetes
import sedna_lifelong_learning.plugin as ll_plugin
from support.api import ApiBase
from support.gm import GMHarness
from support.lc import LCBase, Received
from support.logs import LogCapture
from support.samples import load_sample
from support.waiting import wait_until

from sedna.runtime import LIFELONG_LEARNING_JOBS, FakeClock

__all__ = ["LogCapture", "Received", "load_sample", "wait_until"]

KIND = "lifelonglearningjob"
LABEL = "lifelonglearningjob.sedna.io/"
JOB = "atcii-classifier-demo"
DATASET = "lifelong-dataset"
DS_NODE = "edge0"  # the Dataset's node (its LC runs the triggers)
WORKER_NODE = "edge-node"  # the sample job's templates' node
TRAIN_INPUT: dict[str, Any] = {
    "dataURL": "/output/data/train/1/data.txt",
    "outputDir": "/output/train/1",
}
KB_MODEL: dict[str, Any] = {
    "format": "pkl",
    "url": "/output/train/1/index.pkl",
    "classes": ["cooler", "no change", "warmer"],
    "current_metric": {"task-1": {"precision_score": 0.8}},
    "number_of_labeled_unseen_sample": 96,
}
TRAIN_OUTPUT: dict[str, Any] = {"models": [KB_MODEL], "ownerInfo": None}
EVAL_INPUT: dict[str, Any] = {
    "models": [{"format": "pkl", "url": "/output/train/1/index.pkl"}],
    "dataURL": "/output/data/eval/1/data.txt",
    "outputDir": "/output/eval/1",
}
EVAL_OUTPUT: dict[str, Any] = {
    "models": [{**KB_MODEL, "metrics": {"precision_score": [0.9]}}],
    "ownerInfo": None,
}
DEPLOY_INPUT: dict[str, Any] = {"models": [{"format": "pkl", "url": "/output/train/1/index.pkl"}]}


class Api(ApiBase):
    """Raw access to the test namespace (the test's view of the cluster)."""

    subject = JOB

    def __init__(self, api_client: kubernetes.client.ApiClient, namespace: str) -> None:
        super().__init__(api_client, namespace)
        self.jobs = self.kube.resource(LIFELONG_LEARNING_JOBS)

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        if obj["kind"] == "LifelongLearningJob":
            return self.jobs.create(self.ns, obj)
        return super().create(obj)

    def job(self, name: str = JOB) -> dict[str, Any]:
        return self.jobs.get(self.ns, name)

    def conditions(self, name: str = JOB) -> list[dict[str, Any]]:
        return list((self.job(name).get("status") or {}).get("conditions") or [])

    def states(self, name: str = JOB) -> list[str]:
        return [f"{c['stage']}/{c['type']}" for c in self.conditions(name)]

    def latest(self, name: str = JOB) -> str:
        states = self.states(name)
        return states[-1] if states else ""

    def wait_latest(self, state: str, name: str = JOB, timeout: float = 5.0) -> None:
        wait_until(lambda: self.latest(name) == state, timeout, f"{name} at {state}")

    def worker_pods(self, worker_type: str, name: str = JOB) -> list[dict[str, Any]]:
        sel = f"{LABEL}name={name},{LABEL}worker-type={worker_type}"
        items = self.pods.list(self.ns, label_selector=sel)["items"]
        return sorted(items, key=lambda p: p["metadata"]["creationTimestamp"])

    def live_pods(self, worker_type: str, name: str = JOB) -> list[dict[str, Any]]:
        return [
            p
            for p in self.worker_pods(worker_type, name)
            if not p["metadata"].get("deletionTimestamp")
        ]

    def set_phase(self, pod: str, phase: str) -> None:
        """The kubelet's part: report the pod's phase."""
        self.pods.patch(self.ns, pod, {"status": {"phase": phase}}, subresource="status")

    def set_phase_and_wait(self, pod: str, phase: str, state: str, name: str = JOB) -> None:
        self.set_phase(pod, phase)
        self.wait_latest(state, name)

    def knowledge_base(self, name: str = JOB) -> dict[str, Any]:
        return dict((self.job(name).get("status") or {}).get("knowledgeBase") or {})


def sample_job(ref: Path, *, name: str = JOB) -> dict[str, Any]:
    """Sedna's LL sample job as it is (only renamed when asked)."""
    job = load_sample(ref, "lifelonglearningjobv1alpha1.yaml")
    job["metadata"]["name"] = name
    return job


def sample_dataset(ref: Path, name: str = DATASET) -> dict[str, Any]:
    ds = load_sample(ref, "dataset_v1alpha1.yaml")
    ds["metadata"]["name"] = name
    return ds


def start_sample_job(api: Api, ref: Path, *, name: str = JOB) -> None:
    """The Dataset and Sedna's sample job, synced to Train/Waiting."""
    api.create(sample_dataset(ref))
    api.create(sample_job(ref, name=name))
    api.wait_latest("Train/Waiting", name)


def env_of(pod: Mapping[str, Any], container: int = 0) -> dict[str, Any]:
    """name -> value (or valueFrom) of a container's env."""
    out: dict[str, Any] = {}
    for e in pod["spec"]["containers"][container].get("env") or []:
        out[e["name"]] = e.get("value", e.get("valueFrom"))
    return out


class TestLC(LCBase):
    """One edge node's LocalController: collects what the GM sends, sends reports."""

    messages = LCBase.select
    wait_for = LCBase.await_message

    def wait_job_state(self, state: str, name: str = JOB, timeout: float = 5.0) -> Received:
        """Wait for an insert of the job whose latest condition is `state`."""

        def latest_is(m: Received) -> bool:
            conds = (m.payload.get("status") or {}).get("conditions") or []
            return bool(conds) and f"{conds[-1]['stage']}/{conds[-1]['type']}" == state

        return self.wait_for(KIND, "insert", name, latest_is, timeout)

    def report(
        self,
        namespace: str,
        phase: str,
        status: str,
        *,
        name: str = JOB,
        input: Mapping[str, Any] | None = None,
        output: Mapping[str, Any] | None = None,
        payload: Any = None,
    ) -> None:
        if payload is None:
            payload = {"phase": phase, "status": status}
            if input is not None:
                payload["input"] = dict(input)
            if output is not None:
                payload["output"] = dict(output)
        self.send_status(namespace, KIND, name, payload)


def run_stage(api: Api, lc: TestLC, stage: str, input: Mapping[str, Any]) -> dict[str, Any]:
    """The LC reports `stage` ("train" or "eval") ready with `input`; the GM creates the
    stage's worker (Starting) and the kubelet runs it (Running). Returns the pod."""
    lc.report(api.ns, stage, "ready", input=input)
    api.wait_latest(f"{stage.capitalize()}/Starting")
    (pod,) = [p for p in api.live_pods(stage) if p["status"].get("phase") == "Pending"]
    api.set_phase_and_wait(pod["metadata"]["name"], "Running", f"{stage.capitalize()}/Running")
    return pod


def data_of(cond: Mapping[str, Any]) -> Any:
    return json.loads(cond["data"])


class GM(GMHarness):
    """The real Manager with this plugin, scoped to the test namespace."""

    def __init__(
        self,
        api_client_factory: Callable[[], kubernetes.client.ApiClient],
        namespace: str,
        *,
        options: Mapping[str, Any] | None = None,
        workers: int = 2,
        clock: FakeClock | None = None,
    ) -> None:
        super().__init__(
            api_client_factory,
            namespace,
            features={ll_plugin.FEATURE_NAME: {"workers": workers, **dict(options or {})}},
            plugins={ll_plugin.FEATURE_NAME: ll_plugin},
            clock=clock,
        )

    @property
    def controller(self) -> Any:
        assert self.manager is not None
        (feature,) = self.manager.features
        return feature.controller
