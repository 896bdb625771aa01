"""The test's own view of its namespace: raw JSON through the real kube client."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import kubernetes

from sedna.runtime import (
    DATASETS,
    EVENTS,
    INCREMENTAL_LEARNING_JOBS,
    MODELS,
    PODS,
    SECRETS,
    KubeClient,
)

from .waiting import wait_until


class ApiBase:
    """Raw access to the test namespace (the test's view of the cluster).

    A feature's subclass sets `subject`, the object its event helpers look at when no
    name is given, and may check each awaited event in `check_event`.
    """

    subject: ClassVar[str]

    def __init__(self, api_client: kubernetes.client.ApiClient, namespace: str) -> None:
        self.kube = KubeClient(api_client)
        self.ns = namespace
        self.jobs = self.kube.resource(INCREMENTAL_LEARNING_JOBS)
        self.pods = self.kube.resource(PODS)
        self.models = self.kube.resource(MODELS)
        self.datasets = self.kube.resource(DATASETS)
        self.secrets = self.kube.resource(SECRETS)
        self.events = self.kube.resource(EVENTS)

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        client = {
            "IncrementalLearningJob": self.jobs,
            "Model": self.models,
            "Dataset": self.datasets,
            "Secret": self.secrets,
            "Pod": self.pods,
        }[str(obj["kind"])]
        return client.create(self.ns, obj)

    def events_of(self, name: str | None = None) -> list[dict[str, Any]]:
        """The namespace's Events whose involved object is `name` (default: the subject)."""
        name = self.subject if name is None else name
        items = self.events.list(self.ns)["items"]
        return [e for e in items if e["involvedObject"].get("name") == name]

    def check_event(self, event: Mapping[str, Any]) -> None:
        """Called on the event `wait_event` found; a subclass asserts more about it."""

    def wait_event(self, reason: str, contains: str = "", name: str | None = None) -> str:
        name = self.subject if name is None else name

        def find() -> Any:
            for e in self.events_of(name):
                msg = e.get("message", "")
                if e["reason"] == reason and contains in msg:
                    self.check_event(e)
                    return msg
            return ""

        return str(wait_until(find, 5.0, f"event {reason} {contains!r} on {name}"))
