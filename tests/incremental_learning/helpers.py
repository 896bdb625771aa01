"""Shared pieces of the incremental-learning tests: the GM, a test LC, a fake kubelet.

The GM is the real `sedna.manager.Manager` with the plugin, talking to the in-process
API server over HTTP; the LC is a websocket client speaking Sedna's wire protocol;
the kubelet is the test itself, patching pod status as a kubelet would. The common
parts of these are in `support` (tests/support/); this file adds the job's side.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import kubernetes
import sedna_incremental_learning.plugin as il_plugin
from support.api import ApiBase
from support.gm import GMHarness
from support.lc import Received
from support.logs import LogCapture
from support.samples import load_sample
from support.waiting import wait_until

from sedna.runtime import FakeClock
from sedna.testing import StagedJobApi, StagedJobLC, pod_env, start_stage

__all__ = [
    "LogCapture",
    "Received",
    "load_sample",
    "start_stage",
    "wait_until",
]  # re-exported for the tests

LABEL = "incrementallearningjob.sedna.io/"
JOB = "helmet-detection-demo"
DS_NODE = "edge0"  # the sample Dataset's node
WORKER_NODE = "edge-node"  # the sample job's templates' node
TRAIN_INPUT: dict[str, Any] = {  # a dataset node LC's train/ready input for the sample job
    "models": [{"format": "ckpt", "url": "/model/frozen.pb"}],
    "dataURL": "/data/train/1.txt",
    "outputDir": "/output/train/1",
}


# -- the API -------------------------------------------------------------------------


class Api(ApiBase, StagedJobApi):
    """Raw access to the test namespace (the test's view of the cluster)."""

    kind = "IncrementalLearningJob"
    subject = JOB

    def event_list(self, name: str = JOB) -> list[tuple[str, str, str]]:
        return [
            (e.get("type", ""), e["reason"], e.get("message", "")) for e in self.events_of(name)
        ]


def sample_job(ref: Path, *, hot_update: bool = False, name: str = JOB) -> dict[str, Any]:
    """Sedna's sample job as it is (hot update switched on when asked)."""
    job = load_sample(ref, "incrementallearningjob_v1alpha1.yaml")
    job["metadata"]["name"] = name
    if hot_update:
        job["spec"]["deploySpec"]["model"]["hotUpdateEnabled"] = True
        job["spec"]["deploySpec"]["model"]["pollPeriodSeconds"] = 30
    return job


def sample_model(ref: Path, name: str) -> dict[str, Any]:
    model = load_sample(ref, "model_v1alpha1.yaml")
    model["metadata"]["name"] = name
    return model


def sample_dataset(ref: Path, name: str = "incremental-dataset") -> dict[str, Any]:
    ds = load_sample(ref, "dataset_v1alpha1.yaml")
    ds["metadata"]["name"] = name
    return ds


def create_dependencies(api: Api, ref: Path, *, dataset: bool = True) -> None:
    """The Models and the Dataset the sample job names (Sedna's samples, renamed)."""
    api.create(sample_model(ref, "initial-model"))
    api.create(sample_model(ref, "deploy-model"))
    if dataset:
        api.create(sample_dataset(ref))


def start_sample_job(
    api: Api, ref: Path, *, hot_update: bool = False, dataset: bool = True
) -> None:
    """The sample job created with its dependencies and synced to Train/Waiting (its
    inference worker made): where the scenarios that drive its stages begin."""
    create_dependencies(api, ref, dataset=dataset)
    api.create(sample_job(ref, hot_update=hot_update))
    api.wait_latest("Train/Waiting")


env_of = pod_env


def mounts_of(pod: Mapping[str, Any], container: int = 0) -> dict[str, str]:
    """mountPath -> volume name."""
    return {
        m["mountPath"]: m["name"]
        for m in pod["spec"]["containers"][container].get("volumeMounts") or []
    }


def volumes_of(pod: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in pod["spec"].get("volumes") or []}


# -- the LC --------------------------------------------------------------------------


class TestLC(StagedJobLC):
    """One edge node's LocalController: collects what the GM sends, sends reports."""

    kind = "incrementallearningjob"
    job = JOB


# -- the GM --------------------------------------------------------------------------


def whole_second_clock() -> FakeClock:
    """A fake clock whose wall time starts on a whole second (conditions have 1 s resolution)."""
    now = datetime.now(UTC).replace(microsecond=0)
    return FakeClock(wall_start=now)


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
        websocket: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            api_client_factory,
            namespace,
            features={il_plugin.FEATURE_NAME: {"workers": workers, **dict(options or {})}},
            plugins={il_plugin.FEATURE_NAME: il_plugin},
            websocket=websocket,
            clock=clock,
        )

    @property
    def controller(self) -> Any:
        assert self.manager is not None
        (feature,) = self.manager.features
        return feature.controller


def with_status(job: Mapping[str, Any], conditions: list[dict[str, Any]]) -> dict[str, Any]:
    out = copy.deepcopy(dict(job))
    out.setdefault("status", {})["conditions"] = conditions
    return out
