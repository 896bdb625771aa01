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
from support.lc import LCBase, Received
from support.logs import LogCapture
from support.samples import load_sample
from support.waiting import wait_until

from sedna.runtime import FakeClock

__all__ = ["LogCapture", "Received", "load_sample", "wait_until"]  # re-exported for the tests

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


class Api(ApiBase):
    """Raw access to the test namespace (the test's view of the cluster)."""

    subject = JOB

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

    def pending_pod(self, worker_type: str, name: str = JOB) -> dict[str, Any]:
        """The one worker of this type the GM has just created: earlier cycles' workers
        have finished, so the unpacking asserts the GM made exactly one new Pending pod."""
        (pod,) = [
            p for p in self.live_pods(worker_type, name) if p["status"].get("phase") == "Pending"
        ]
        return pod

    def set_phase(self, pod: str, phase: str, reason: str = "") -> None:
        """The kubelet's part: report the pod's phase."""
        status: dict[str, Any] = {"phase": phase}
        if reason:
            status["reason"] = reason
        self.pods.patch(self.ns, pod, {"status": status}, subresource="status")

    def set_phase_and_wait(self, pod: str, phase: str, state: str, name: str = JOB) -> None:
        """The kubelet reports the pod's phase and the GM moves the job on to `state`: the
        step by which the tests drive each stage's worker through its life."""
        self.set_phase(pod, phase)
        self.wait_latest(state, name)

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


def env_of(pod: Mapping[str, Any], container: int = 0) -> dict[str, Any]:
    """name -> value (or valueFrom) of a container's env."""
    out: dict[str, Any] = {}
    for e in pod["spec"]["containers"][container].get("env") or []:
        out[e["name"]] = e.get("value", e.get("valueFrom"))
    return out


def mounts_of(pod: Mapping[str, Any], container: int = 0) -> dict[str, str]:
    """mountPath -> volume name."""
    return {
        m["mountPath"]: m["name"]
        for m in pod["spec"]["containers"][container].get("volumeMounts") or []
    }


def volumes_of(pod: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in pod["spec"].get("volumes") or []}


# -- the LC --------------------------------------------------------------------------


class TestLC(LCBase):
    """One edge node's LocalController: collects what the GM sends, sends reports."""

    # the IL tests filter by any of kind, operation and name
    messages = LCBase.select
    wait_for = LCBase.await_message

    def wait_job_state(self, state: str, name: str = JOB, timeout: float = 5.0) -> Received:
        """Wait for an insert of the job whose latest condition is `state`."""

        def latest_is(m: Received) -> bool:
            conds = (m.payload.get("status") or {}).get("conditions") or []
            return bool(conds) and f"{conds[-1]['stage']}/{conds[-1]['type']}" == state

        return self.wait_for("incrementallearningjob", "insert", name, latest_is, timeout)

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
        self.send_status(namespace, "incrementallearningjob", name, payload)


def start_stage(api: Api, lc: TestLC, stage: str, input: Mapping[str, Any]) -> None:
    """The LC reports `stage` ("train" or "eval") ready with `input`, and the GM answers
    by creating the stage's worker: the job is then at <Stage>/Starting."""
    lc.report(api.ns, stage, "ready", input=input)
    api.wait_latest(f"{stage.capitalize()}/Starting")


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
