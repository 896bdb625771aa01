"""Shared pieces of the incremental-learning tests: the GM, a test LC, a fake kubelet.

The GM is the real `sedna.manager.Manager` with the plugin, talking to the in-process
API server over HTTP; the LC is a websocket client speaking Sedna's wire protocol;
the kubelet is the test itself, patching pod status as a kubelet would.
"""

from __future__ import annotations

import base64
import copy
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import kubernetes
import sedna_incremental_learning.plugin as il_plugin
import yaml
from dependency_injector import providers
from loguru import logger
from websockets.sync.client import ClientConnection, connect

from sedna.manager import Manager
from sedna.plugins.loader import discover_plugins
from sedna.runtime import (
    DATASETS,
    EVENTS,
    INCREMENTAL_LEARNING_JOBS,
    MODELS,
    PODS,
    SECRETS,
    FakeClock,
    GMConfig,
    KubeClient,
    RuntimeContainer,
)

GO_HELLO = '{"namespace":"","resourceKind":"","resourceName":"","operation":""}'
LABEL = "incrementallearningjob.sedna.io/"
JOB = "helmet-detection-demo"
DS_NODE = "edge0"  # the sample Dataset's node
WORKER_NODE = "edge-node"  # the sample job's templates' node


def wait_until(pred: Callable[[], Any], timeout: float = 5.0, what: str = "condition") -> Any:
    """Poll until pred() is truthy and return it; a deadline, not a timing assert."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


# -- the API -------------------------------------------------------------------------


class Api:
    """Raw access to the test namespace (the test's view of the cluster)."""

    def __init__(self, api_client: kubernetes.client.ApiClient, namespace: str) -> None:
        self.kube = KubeClient(api_client)
        self.ns = namespace
        self.jobs = self.kube.resource(INCREMENTAL_LEARNING_JOBS)
        self.pods = self.kube.resource(PODS)
        self.models = self.kube.resource(MODELS)
        self.datasets = self.kube.resource(DATASETS)
        self.secrets = self.kube.resource(SECRETS)
        self.events = self.kube.resource(EVENTS)

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

    def set_phase(self, pod: str, phase: str, reason: str = "") -> None:
        """The kubelet's part: report the pod's phase."""
        status: dict[str, Any] = {"phase": phase}
        if reason:
            status["reason"] = reason
        self.pods.patch(self.ns, pod, {"status": status}, subresource="status")

    def event_list(self, name: str = JOB) -> list[tuple[str, str, str]]:
        items = self.events.list(self.ns)["items"]
        return [
            (e.get("type", ""), e["reason"], e.get("message", ""))
            for e in items
            if e["involvedObject"].get("name") == name
        ]

    def wait_event(self, reason: str, contains: str = "", name: str = JOB) -> str:
        def find() -> str:
            for _, r, msg in self.event_list(name):
                if r == reason and contains in msg:
                    return msg
            return ""

        return str(wait_until(find, 5.0, f"event {reason} {contains!r} on {name}"))

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        client = {
            "IncrementalLearningJob": self.jobs,
            "Model": self.models,
            "Dataset": self.datasets,
            "Secret": self.secrets,
            "Pod": self.pods,
        }[str(obj["kind"])]
        return client.create(self.ns, obj)


def load_sample(ref: Path, file: str) -> dict[str, Any]:
    return dict(yaml.safe_load((ref / "crd-samples" / file).read_text()))


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


@dataclass
class Received:
    operation: str
    kind: str
    namespace: str
    name: str
    payload: dict[str, Any]


@dataclass
class TestLC:
    """One edge node's LocalController: collects what the GM sends, sends reports."""

    port: int
    node: str
    received: list[Received] = field(default_factory=list)

    __test__ = False  # not a pytest class

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self.ws: ClientConnection = connect(
            f"ws://127.0.0.1:{self.port}/",
            additional_headers={"Node-Name": self.node},
            open_timeout=5,
            max_size=None,
            compression=None,
            legacy=True,
        )
        self.ws.send(GO_HELLO)
        self._thread = threading.Thread(target=self._read, daemon=True, name=f"lc-{self.node}")
        self._thread.start()

    def _read(self) -> None:
        try:
            for raw in self.ws:
                doc = json.loads(raw)
                head = doc["header"]
                payload = json.loads(base64.b64decode(doc["content"]))
                with self._lock:
                    self.received.append(
                        Received(
                            head["operation"],
                            head["resourceKind"],
                            head["namespace"],
                            head["resourceName"],
                            payload,
                        )
                    )
        except Exception:  # connection closed by the GM or the test
            return

    def messages(
        self, kind: str | None = None, operation: str | None = None, name: str | None = None
    ) -> list[Received]:
        with self._lock:
            return [
                m
                for m in self.received
                if (kind is None or m.kind == kind)
                and (operation is None or m.operation == operation)
                and (name is None or m.name == name)
            ]

    def clear(self) -> None:
        with self._lock:
            self.received.clear()

    def wait_for(
        self,
        kind: str,
        operation: str,
        name: str,
        pred: Callable[[Received], bool] = lambda m: True,
        timeout: float = 5.0,
    ) -> Received:
        def find() -> Received | None:
            for m in reversed(self.messages(kind, operation, name)):
                if pred(m):
                    return m
            return None

        found = wait_until(find, timeout, f"{operation} {kind} {name} on LC {self.node}")
        assert isinstance(found, Received)
        return found

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
        content = base64.b64encode(json.dumps(payload).encode()).decode()
        header = {
            "namespace": namespace,
            "resourceKind": "incrementallearningjob",
            "resourceName": name,
            "operation": "status",
        }
        self.ws.send(json.dumps({"header": header, "content": content}) + "\n")

    def close(self) -> None:
        self.ws.close()


# -- the GM --------------------------------------------------------------------------


def whole_second_clock() -> FakeClock:
    """A fake clock whose wall time starts on a whole second (conditions have 1 s resolution)."""
    now = datetime.now(UTC).replace(microsecond=0)
    return FakeClock(wall_start=now)


class GM:
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
        features: dict[str, Any] = {
            p.name: {"enabled": False}
            for p in discover_plugins()
            if p.name != il_plugin.FEATURE_NAME
        }
        features[il_plugin.FEATURE_NAME] = {"workers": workers, **dict(options or {})}
        self.config = GMConfig.model_validate(
            {
                "namespace": namespace,
                "minResyncPeriodSeconds": 3600,  # progress must come from events, not resyncs
                "websocket": {"address": "127.0.0.1", "port": 0, "auth": "none"},
                "metrics": {"enabled": False},
                "features": features,
            }
        )
        self.clock = clock
        self._api_client_factory = api_client_factory
        self.manager: Manager | None = None

    def start(self) -> GM:
        container = RuntimeContainer(config=self.config)
        container.api_client.override(providers.Object(self._api_client_factory()))
        if self.clock is not None:
            container.clock.override(providers.Object(self.clock))
        self.manager = Manager(
            self.config,
            container=container,
            extra_plugins={il_plugin.FEATURE_NAME: il_plugin},
            cache_sync_timeout=10,
        )
        self.manager.start()
        return self

    @property
    def port(self) -> int:
        assert self.manager is not None
        return int(self.manager.container.message_layer().port)

    @property
    def controller(self) -> Any:
        assert self.manager is not None
        (feature,) = self.manager.features
        return feature.controller

    def stop(self) -> None:
        if self.manager is not None:
            self.manager.container.events().flush(2.0)
            informers = self.manager.container.informers()
            self.manager.stop()
            self.manager = None
            # The manager only logs the detector's final verdict (a GM keeps stopping);
            # a test must fail: raises CacheMutationError when the detector is on.
            informers.check_mutations()

    def restart(self) -> GM:
        self.stop()
        return self.start()


@dataclass
class LogCapture:
    lines: list[str] = field(default_factory=list)

    def contains(self, *parts: str) -> bool:
        return any(all(p in line for p in parts) for line in list(self.lines))


def capture_logs() -> Iterator[LogCapture]:
    cap = LogCapture()
    sink = logger.add(lambda m: cap.lines.append(str(m)), level="DEBUG")
    try:
        yield cap
    finally:
        logger.remove(sink)


def with_status(job: Mapping[str, Any], conditions: list[dict[str, Any]]) -> dict[str, Any]:
    out = copy.deepcopy(dict(job))
    out.setdefault("status", {})["conditions"] = conditions
    return out
