"""The stage machine knows no feature: a minimal staged feature, defined here, runs a full
Train -> Eval -> Deploy cycle on it through the real Manager, websocket and API server.

The feature is shaped like Sedna's LifelongLearningJob (its CRD and sample): no models,
the inference worker created only at Deploy, its own status field from the LC's reports.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml
from support.gm import GMHarness
from support.lc import LCBase
from support.rbac import declare_test_feature_access
from support.waiting import wait_until

from sedna.runtime import (
    EVENTS,
    INSERT,
    LIFELONG_LEARNING_JOBS,
    PODS,
    ApiAccess,
    ControllerContext,
    EdgeMessage,
    Feature,
    FeatureController,
    InvalidJob,
    KubeClient,
    PodRequest,
    ReportError,
    StageBlocked,
    StagedJobFeature,
    StageMachine,
    StageOptions,
    WorkerParam,
    hookimpl,
)

NODE = "edge0"
NAME = "atcii-classifier-demo"
LABEL = "lifelonglearningjob.sedna.io/"
WIRE_KIND = "lifelonglearningjob"


class ToyFeature(StagedJobFeature):
    def __init__(self) -> None:
        super().__init__(resource=LIFELONG_LEARNING_JOBS, log_name="toy staged job")

    def parse_spec(self, job: Mapping[str, Any]) -> Mapping[str, Any]:
        spec = job.get("spec")
        if not isinstance(spec, Mapping) or not isinstance(spec.get("trainSpec"), Mapping):
            raise InvalidJob("spec.trainSpec", "required")
        return spec

    def _request(self, spec: Any, section: str, worker: str, env: dict[str, str]) -> PodRequest:
        return PodRequest(
            spec[section]["template"],
            WorkerParam(worker_type=worker, env=env),
            f"spec.{section}.template",
        )

    def stage_pod(
        self, job: Any, spec: Any, stage: str, condition: Any, data_field: str
    ) -> PodRequest:
        data = json.loads(condition.get("data") or "{}")
        url = (data.get("input") or {}).get("dataURL", "")
        if not url:
            raise StageBlocked("NoInput", f"{data_field}.input.dataURL: required")
        section = "trainSpec" if stage == "Train" else "evalSpec"
        return self._request(spec, section, stage.lower(), {"DATA_URL": url})

    def inference_pod(self, job: Any, spec: Any) -> PodRequest:
        return self._request(spec, "deploySpec", "inference", {"KIND": "toy"})

    def plan(self, operation: str, job: Mapping[str, Any]) -> list[EdgeMessage]:
        out = dict(job)
        out["kind"] = "LifelongLearningJob"
        out.setdefault("apiVersion", "sedna.io/v1alpha1")
        return [EdgeMessage(NODE, operation, out)]

    def report_data(self, content: Mapping[str, Any]) -> str:
        payload = {k: content[k] for k in ("input", "output") if k in content}
        if "input" in payload and not isinstance(payload["input"], dict):
            raise ReportError("input", "expected an object")
        return json.dumps(payload, separators=(",", ":")) if payload else ""

    def on_report(self, status: dict[str, Any], content: Mapping[str, Any]) -> None:
        kb = (content.get("output") or {}).get("knowledgeBase")
        if kb is not None:
            status["knowledgeBase"] = kb


class ToyPlugin:
    @hookimpl
    def sedna_features(self) -> Sequence[Feature]:
        def build(ctx: ControllerContext) -> FeatureController:
            return StageMachine(ctx, ToyFeature(), StageOptions(max_conditions=10))

        return [
            Feature(
                name="toy_staged", kinds=["LifelongLearningJob"], factory=build, access=TOY_ACCESS
            )
        ]


# A feature defined in a test is in no shipped RBAC: its calls are checked against this.
TOY_ACCESS = (
    ApiAccess("sedna.io", ["lifelonglearningjobs"], ["get", "list", "watch", "patch"]),
    ApiAccess("sedna.io", ["lifelonglearningjobs/status"], ["update"]),
)
declare_test_feature_access(TOY_ACCESS)


@pytest.fixture()
def kube(api_client: kubernetes.client.ApiClient) -> KubeClient:
    return KubeClient(api_client)


@pytest.fixture()
def gm(apiserver: Any, namespace: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[GMHarness]:
    # the informers then fail loudly if the machine changes a cached object
    monkeypatch.setenv("SEDNA_CACHE_MUTATION_DETECTOR", "1")

    def client() -> kubernetes.client.ApiClient:
        cfg = apiserver.client_configuration()
        return kubernetes.client.ApiClient(cfg)

    harness = GMHarness(
        client,
        namespace,
        features={"toy_staged": {"workers": 1}},
        plugins={"toy_staged": ToyPlugin()},
    ).start()
    yield harness
    harness.stop()


@pytest.fixture()
def lc(gm: GMHarness) -> Iterator[LCBase]:
    conn = LCBase(gm.port, NODE)
    yield conn
    conn.close()


def _job(sample_dir: Path) -> dict[str, Any]:
    path = sample_dir / "lifelonglearningjobv1alpha1.yaml"
    job = yaml.safe_load(path.read_text())
    for section in ("trainSpec", "evalSpec", "deploySpec"):
        job["spec"][section]["template"]["spec"]["nodeName"] = NODE
    return copy.deepcopy(job)


def test_a_feature_defined_outside_the_runtime_runs_a_whole_cycle(
    gm: GMHarness, lc: LCBase, kube: KubeClient, namespace: str, sample_dir: Path
) -> None:
    jobs, pods = kube.resource(LIFELONG_LEARNING_JOBS), kube.resource(PODS)
    jobs.create(namespace, _job(sample_dir))

    def latest() -> str:
        conds = (jobs.get(namespace, NAME).get("status") or {}).get("conditions") or []
        return f"{conds[-1]['stage']}/{conds[-1]['type']}" if conds else ""

    def wait(state: str) -> None:
        wait_until(lambda: latest() == state, what=f"job at {state}")

    def live(worker: str) -> list[dict[str, Any]]:
        sel = f"{LABEL}name={NAME},{LABEL}worker-type={worker}"
        return [
            p
            for p in pods.list(namespace, label_selector=sel)["items"]
            if not p["metadata"].get("deletionTimestamp")
        ]

    def phase(pod: Mapping[str, Any], value: str) -> None:
        name = pod["metadata"]["name"]
        pods.patch(namespace, name, {"status": {"phase": value}}, subresource="status")

    def report(stage: str, status: str, **content: Any) -> None:
        lc.send_status(namespace, WIRE_KIND, NAME, {"phase": stage, "status": status, **content})

    wait("Train/Waiting")
    assert jobs.get(namespace, NAME)["status"]["startTime"]
    assert live("inference") == []  # not at start: only at Deploy
    lc.await_message(WIRE_KIND, INSERT, NAME)  # the feature's plan routed it

    for stage, next_state in (("train", "Eval/Waiting"), ("eval", "Deploy/Waiting")):
        report(stage, "ready", input={"dataURL": f"/data/{stage}.csv"})
        wait(f"{stage.capitalize()}/Starting")
        (pod,) = live(stage)
        env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
        assert env["DATA_URL"] == f"/data/{stage}.csv"
        phase(pod, "Running")
        wait(f"{stage.capitalize()}/Running")
        assert (
            jobs.get(namespace, NAME)["metadata"]["annotations"][f"sedna.io/{stage.capitalize()}"]
            == NODE
        )
        phase(pod, "Succeeded")
        wait(next_state)

    report("deploy", "ready", output={"knowledgeBase": {"tasks": 3}})
    wait("Train/Waiting")
    (inference,) = live("inference")
    assert inference["spec"]["containers"][0]["env"][0] == {
        "name": "UT_SAVED_URL",
        "value": "/ut_saved_url",
    }
    assert jobs.get(namespace, NAME)["status"]["knowledgeBase"] == {"tasks": 3}
    states = [
        f"{c['stage']}/{c['type']}" for c in jobs.get(namespace, NAME)["status"]["conditions"]
    ]
    assert states[-3:] == ["Deploy/Ready", "Deploy/Completed", "Train/Waiting"]


def test_an_invalid_report_names_the_field_inside_the_content(
    gm: GMHarness, lc: LCBase, kube: KubeClient, namespace: str, sample_dir: Path
) -> None:
    jobs, events = kube.resource(LIFELONG_LEARNING_JOBS), kube.resource(EVENTS)
    jobs.create(namespace, _job(sample_dir))
    lc.await_message(WIRE_KIND, INSERT, NAME)
    lc.send_status(namespace, WIRE_KIND, NAME, {"phase": "train", "status": "ready", "input": 3})

    def invalid_reports() -> list[str]:
        items = events.list(namespace)["items"]
        return [e.get("message", "") for e in items if e["reason"] == "InvalidReport"]

    (msg,) = wait_until(invalid_reports, what="InvalidReport event")
    assert f"node {NODE}" in msg and "content.input: expected an object" in msg
    states = [c["type"] for c in jobs.get(namespace, NAME)["status"]["conditions"]]
    assert states == ["Waiting"]
