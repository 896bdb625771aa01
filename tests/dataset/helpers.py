"""The Dataset tests' pieces: the real Manager with the plugin, a test LC, the API view.

The GM is `sedna.manager.Manager` with the `dataset` feature (and, where a test says
so, `incremental_learning`), talking to the in-process API server over HTTP; the LC
is a websocket client speaking Sedna's wire protocol, as the Go LC does.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes
import sedna_dataset.plugin as ds_plugin
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
    SECRETS,
    Clock,
    GMConfig,
    KubeClient,
    RuntimeContainer,
)

GO_HELLO = '{"namespace":"","resourceKind":"","resourceName":"","operation":""}'
SAMPLE = "dataset-demo0"  # the sample Dataset's name
SAMPLE_NODE = "edge0"  # and its node

PLUGINS: dict[str, object] = {
    ds_plugin.FEATURE_NAME: ds_plugin,
    il_plugin.FEATURE_NAME: il_plugin,
}


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


def load_sample(ref: Path, file: str) -> dict[str, Any]:
    return dict(yaml.safe_load((ref / "crd-samples" / file).read_text()))


def sample_dataset(ref: Path, **spec: Any) -> dict[str, Any]:
    """Sedna's sample Dataset, spec fields overridden by `spec`."""
    ds = load_sample(ref, "dataset_v1alpha1.yaml")
    ds["spec"].update(spec)
    return ds


# -- the API -------------------------------------------------------------------------


class Api:
    """Raw access to the test namespace (the test's view of the cluster)."""

    def __init__(self, api_client: kubernetes.client.ApiClient, namespace: str) -> None:
        self.kube = KubeClient(api_client)
        self.ns = namespace
        self.datasets = self.kube.resource(DATASETS)
        self.secrets = self.kube.resource(SECRETS)
        self.events = self.kube.resource(EVENTS)
        self.models = self.kube.resource(MODELS)
        self.jobs = self.kube.resource(INCREMENTAL_LEARNING_JOBS)

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        client = {
            "Dataset": self.datasets,
            "Secret": self.secrets,
            "Model": self.models,
            "IncrementalLearningJob": self.jobs,
        }[str(obj["kind"])]
        return client.create(self.ns, obj)

    def dataset(self, name: str = SAMPLE) -> dict[str, Any]:
        return self.datasets.get(self.ns, name)

    def status(self, name: str = SAMPLE) -> dict[str, Any]:
        return dict(self.dataset(name).get("status") or {})

    def set_node(self, node: str, name: str = SAMPLE) -> None:
        self.datasets.patch(self.ns, name, {"spec": {"nodeName": node}})

    def event_list(self, name: str = SAMPLE) -> list[tuple[str, str, str, str]]:
        items = self.events.list(self.ns)["items"]
        return [
            (e.get("type", ""), e["reason"], e.get("message", ""), e["involvedObject"]["kind"])
            for e in items
            if e["involvedObject"].get("name") == name
        ]

    def wait_event(self, reason: str, contains: str = "", name: str = SAMPLE) -> str:
        def find() -> str:
            for type_, r, msg, kind in self.event_list(name):
                if r == reason and contains in msg:
                    assert (type_, kind) == ("Warning", "Dataset")
                    return msg
            return ""

        return str(wait_until(find, 5.0, f"event {reason} {contains!r} on {name}"))


# -- the LC --------------------------------------------------------------------------


@dataclass
class Received:
    operation: str
    kind: str  # the header's resourceKind
    namespace: str
    name: str
    content: str  # the frame's content as sent: base64 of the JSON object
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
                payload = json.loads(base64.b64decode(doc["content"], validate=True))
                with self._lock:
                    self.received.append(
                        Received(
                            head["operation"],
                            head["resourceKind"],
                            head["namespace"],
                            head["resourceName"],
                            doc["content"],
                            payload,
                        )
                    )
        except Exception:  # connection closed by the GM or the test
            return

    def messages(self, operation: str | None = None, name: str | None = None) -> list[Received]:
        with self._lock:
            return [
                m
                for m in self.received
                if m.kind == "dataset"
                and (operation is None or m.operation == operation)
                and (name is None or m.name == name)
            ]

    def wait_for(
        self,
        operation: str,
        name: str = SAMPLE,
        pred: Callable[[Received], bool] = lambda m: True,
        timeout: float = 5.0,
    ) -> Received:
        def find() -> Received | None:
            for m in reversed(self.messages(operation, name)):
                if pred(m):
                    return m
            return None

        found = wait_until(find, timeout, f"{operation} dataset {name} on LC {self.node}")
        assert isinstance(found, Received)
        return found

    def report(self, namespace: str, payload: Any, name: str = SAMPLE) -> None:
        """A status report as the Go LC's dataset manager writes it."""
        content = base64.b64encode(json.dumps(payload).encode()).decode()
        header = {
            "namespace": namespace,
            "resourceKind": "Dataset",  # the Go LC uses the object's kind as is
            "resourceName": name,
            "operation": "status",
        }
        self.ws.send(json.dumps({"header": header, "content": content}) + "\n")

    def close(self) -> None:
        self.ws.close()


# -- the GM --------------------------------------------------------------------------


class GM:
    """The real Manager with the named features only, scoped to the test namespace."""

    def __init__(
        self,
        api_client_factory: Callable[[], kubernetes.client.ApiClient],
        namespace: str,
        *,
        features: Sequence[str] = (ds_plugin.FEATURE_NAME,),
        clock: Clock | None = None,
    ) -> None:
        config: dict[str, Any] = {
            p.name: {"enabled": False} for p in discover_plugins() if p.name not in features
        }
        for name in features:
            config[name] = {"workers": 1}
        self.config = GMConfig.model_validate(
            {
                "namespace": namespace,
                "minResyncPeriodSeconds": 3600,  # progress must come from events, not resyncs
                "websocket": {
                    "address": "127.0.0.1",
                    "port": 0,
                    "auth": "none",
                    # the credential annotation may travel on the tests' plain ws
                    "allowPlainCredentials": True,
                },
                "metrics": {"enabled": False},
                "features": config,
            }
        )
        self.features = tuple(features)
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
            extra_plugins={n: PLUGINS[n] for n in self.features},
            cache_sync_timeout=10,
        )
        self.manager.start()
        return self

    @property
    def port(self) -> int:
        assert self.manager is not None
        return int(self.manager.container.message_layer().port)

    def stop(self) -> None:
        if self.manager is not None:
            self.manager.container.events().flush(2.0)
            informers = self.manager.container.informers()
            self.manager.stop()
            self.manager = None
            informers.check_mutations()


@dataclass
class LogCapture:
    lines: list[str] = field(default_factory=list)

    def contains(self, *parts: str) -> bool:
        return any(all(p in line for p in parts) for line in list(self.lines))

    def wait(self, *parts: str) -> None:
        wait_until(lambda: self.contains(*parts), 5.0, f"a log line with {parts}")


def capture_logs() -> Iterator[LogCapture]:
    cap = LogCapture()
    sink = logger.add(lambda m: cap.lines.append(str(m)), level="DEBUG")
    try:
        yield cap
    finally:
        logger.remove(sink)
