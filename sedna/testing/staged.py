"""Testing a staged-job feature (Train -> Eval -> Deploy): the job's conditions and
worker pods as the test sees them, the kubelet's phase reports, and the LC's reports.

`StagedJobApi` is a mixin for a test's API view that has `ns`, `jobs` (the feature's
`ResourceClient`) and `pods`; `StagedJobLC` is the Go-protocol test LC for one kind.
A feature's tests set the kind and their sample job's name on subclasses::

    class Api(MyApiView, StagedJobApi):
        kind = "LifelongLearningJob"
        subject = "atcii-classifier-demo"

    class TestLC(StagedJobLC):
        kind = "lifelonglearningjob"
        job = "atcii-classifier-demo"
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from sedna.runtime import ResourceClient
from sedna.testing.lc import LCBase, Received
from sedna.testing.waiting import wait_until

__all__ = ["StagedJobApi", "StagedJobLC", "pod_env", "run_stage", "start_stage"]


def _state(condition: Mapping[str, Any]) -> str:
    return f"{condition['stage']}/{condition['type']}"


class StagedJobApi:
    """The jobs of one staged kind in the test namespace, read from the server."""

    kind: ClassVar[str]
    """The job's kind, `IncrementalLearningJob`; its workers' labels start with it."""
    subject: ClassVar[str]
    """The job the helpers look at when no name is given."""

    ns: str
    jobs: ResourceClient
    pods: ResourceClient

    @property
    def label(self) -> str:
        """The prefix of the labels the GM puts on the job's workers."""
        return f"{self.kind.lower()}.sedna.io/"

    def job(self, name: str | None = None) -> dict[str, Any]:
        return self.jobs.get(self.ns, name or self.subject)

    def conditions(self, name: str | None = None) -> list[dict[str, Any]]:
        return list((self.job(name).get("status") or {}).get("conditions") or [])

    def states(self, name: str | None = None) -> list[str]:
        """`<stage>/<type>` of each condition, oldest first."""
        return [_state(c) for c in self.conditions(name)]

    def latest(self, name: str | None = None) -> str:
        states = self.states(name)
        return states[-1] if states else ""

    def wait_latest(self, state: str, name: str | None = None, timeout: float = 5.0) -> None:
        name = name or self.subject
        wait_until(lambda: self.latest(name) == state, timeout, f"{name} at {state}")

    def worker_pods(self, worker_type: str, name: str | None = None) -> list[dict[str, Any]]:
        """The job's pods of `worker_type` (train, eval, inference), oldest first."""
        sel = f"{self.label}name={name or self.subject},{self.label}worker-type={worker_type}"
        items = self.pods.list(self.ns, label_selector=sel)["items"]
        return sorted(items, key=lambda p: p["metadata"]["creationTimestamp"])

    def live_pods(self, worker_type: str, name: str | None = None) -> list[dict[str, Any]]:
        """`worker_pods` that are not being deleted."""
        return [
            p
            for p in self.worker_pods(worker_type, name)
            if not p["metadata"].get("deletionTimestamp")
        ]

    def pending_pod(self, worker_type: str, name: str | None = None) -> dict[str, Any]:
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

    def set_phase_and_wait(self, pod: str, phase: str, state: str, name: str | None = None) -> None:
        """The kubelet reports the pod's phase and the GM moves the job on to `state`: the
        step by which a test drives each stage's worker through its life."""
        self.set_phase(pod, phase)
        self.wait_latest(state, name)


class StagedJobLC(LCBase):
    """One edge node's LocalController for one staged kind: what the GM sends, the
    reports the LC forwards."""

    kind: ClassVar[str]
    """The header's resourceKind, `incrementallearningjob`."""
    job: ClassVar[str]
    """The job `wait_job_state` and `report` name when no name is given."""

    messages = LCBase.select
    wait_for = LCBase.await_message

    def wait_job_state(self, state: str, name: str | None = None, timeout: float = 5.0) -> Received:
        """Wait for an insert of the job whose latest condition is `state`."""

        def latest_is(m: Received) -> bool:
            conds = (m.payload.get("status") or {}).get("conditions") or []
            return bool(conds) and _state(conds[-1]) == state

        return self.wait_for(self.kind, "insert", name or self.job, latest_is, timeout)

    def report(
        self,
        namespace: str,
        phase: str,
        status: str,
        *,
        name: str | None = None,
        input: Mapping[str, Any] | None = None,
        output: Mapping[str, Any] | None = None,
        payload: Any = None,
    ) -> None:
        """The LC's report of a stage (`train`, `eval`, `deploy`) and its status
        (`ready`, `completed`, ...), or `payload` as it is."""
        if payload is None:
            payload = {"phase": phase, "status": status}
            if input is not None:
                payload["input"] = dict(input)
            if output is not None:
                payload["output"] = dict(output)
        self.send_status(namespace, self.kind, name or self.job, payload)


def start_stage(api: StagedJobApi, lc: StagedJobLC, stage: str, input: Mapping[str, Any]) -> None:
    """The LC reports `stage` ("train" or "eval") ready with `input`, and the GM answers
    by creating the stage's worker: the job is then at <Stage>/Starting."""
    lc.report(api.ns, stage, "ready", input=input)
    api.wait_latest(f"{stage.capitalize()}/Starting")


def run_stage(
    api: StagedJobApi, lc: StagedJobLC, stage: str, input: Mapping[str, Any]
) -> dict[str, Any]:
    """`start_stage`, then the kubelet runs the new worker (<Stage>/Running); returns it."""
    start_stage(api, lc, stage, input)
    pod = api.pending_pod(stage)
    api.set_phase_and_wait(pod["metadata"]["name"], "Running", f"{stage.capitalize()}/Running")
    return pod


def pod_env(pod: Mapping[str, Any], container: int = 0) -> dict[str, Any]:
    """name -> value (or valueFrom) of a container's env."""
    out: dict[str, Any] = {}
    for e in pod["spec"]["containers"][container].get("env") or []:
        out[e["name"]] = e.get("value", e.get("valueFrom"))
    return out
