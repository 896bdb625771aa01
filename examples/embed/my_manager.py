"""A custom manager that embeds the sedna-gm runtime with its own downstream transport."""

from __future__ import annotations

import argparse
import json
import signal
import threading
from collections.abc import Mapping
from typing import IO, Any

from dependency_injector import providers

from sedna.manager import Manager
from sedna.runtime import (
    MODELS,
    ControllerContext,
    Feature,
    GMConfig,
    ResourceEventHandlerFuncs,
    RuntimeContainer,
    hookimpl,
)

NODE_ANNOTATION = "example.io/edge-node"


class JsonLineSender:
    """Our own edge transport: one JSON object per line on a stream."""

    def __init__(self, out: IO[str]) -> None:
        self._out = out
        self._lock = threading.Lock()

    def __call__(self, node: str, event: str, obj: Mapping[str, Any]) -> None:
        line = json.dumps({"node": node, "event": event, "object": obj}, sort_keys=True)
        with self._lock:
            self._out.write(line + "\n")
            self._out.flush()


class ModelAnnouncer:
    """Sends annotated Models to their edge node whenever they change."""

    def __init__(self, ctx: ControllerContext) -> None:
        self._send = ctx.send
        ctx.informers.informer(MODELS).add_event_handler(
            ResourceEventHandlerFuncs(
                add=self._announce,
                update=lambda _old, new: self._announce(new),
                delete=self._retract,
            )
        )

    def _announce(self, model: Mapping[str, Any]) -> None:
        node = (model.get("metadata", {}).get("annotations") or {}).get(NODE_ANNOTATION)
        if node:
            self._send(node, "insert", model)

    def _retract(self, model: Any) -> None:
        obj = getattr(model, "obj", model)  # a tombstone carries the last known object
        node = (obj.get("metadata", {}).get("annotations") or {}).get(NODE_ANNOTATION)
        if node:
            self._send(node, "delete", obj)

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


class ExamplePlugin:
    """Registered directly, without entry points: an embedding app owns its plugin list."""

    @hookimpl
    def sedna_features(self) -> list[Feature]:
        return [Feature("model-announcer", ["Model"], ModelAnnouncer)]


def build_manager(kubeconfig: str, out: IO[str]) -> Manager:
    config = GMConfig.model_validate({"kubeConfig": kubeconfig, "metrics": {"enabled": False}})
    container = RuntimeContainer(config=config)
    container.downstream.override(providers.Object(JsonLineSender(out)))
    # Only our own feature: installed plugins are not discovered.
    return Manager(
        config,
        container=container,
        extra_plugins={"model-announcer": ExamplePlugin()},
        use_entry_points=False,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    with open(args.out, "a", encoding="utf-8") as out:
        manager = build_manager(args.kubeconfig, out)
        signal.signal(signal.SIGTERM, lambda *_: manager.request_stop())
        signal.signal(signal.SIGINT, lambda *_: manager.request_stop())
        manager.run()


if __name__ == "__main__":
    main()
