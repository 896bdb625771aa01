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
from support.lc import Received
from support.logs import LogCapture
from support.samples import load_sample
from support.waiting import wait_until

from sedna.runtime import LIFELONG_LEARNING_JOBS, FakeClock
from sedna.testing import StagedJobApi, StagedJobLC, pod_env, run_stage

__all__ = ["LogCapture", "Received", "load_sample", "run_stage", "wait_until"]

KIND = "lifelonglearningjob"
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


class Api(ApiBase, StagedJobApi):
    """Raw access to the test namespace (the test's view of the cluster)."""

    kind = "LifelongLearningJob"
    subject = JOB

    def __init__(self, api_client: kubernetes.client.ApiClient, namespace: str) -> None:
        super().__init__(api_client, namespace)
        self.jobs = self.kube.resource(LIFELONG_LEARNING_JOBS)

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        if obj["kind"] == "LifelongLearningJob":
            return self.jobs.create(self.ns, obj)
        return super().create(obj)

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


env_of = pod_env


class TestLC(StagedJobLC):
    """One edge node's LocalController: collects what the GM sends, sends reports."""

    kind = KIND
    job = JOB


def run_round(api: Api, lc: TestLC) -> None:
    """One whole round of the sample job through one LC: Train, Eval, Deploy, back to
    Train/Waiting, with the workers finishing as the kubelet would make them."""
    train = run_stage(api, lc, "train", TRAIN_INPUT)
    lc.report(api.ns, "train", "completed", output=TRAIN_OUTPUT)
    api.wait_latest("Eval/Waiting")
    api.set_phase(train["metadata"]["name"], "Succeeded")
    ev = run_stage(api, lc, "eval", EVAL_INPUT)
    api.set_phase_and_wait(ev["metadata"]["name"], "Succeeded", "Deploy/Waiting")
    lc.report(api.ns, "deploy", "ready", input=DEPLOY_INPUT)
    api.wait_latest("Train/Waiting")


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
