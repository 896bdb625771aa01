"""A custom manager that embeds the sedna-gm runtime with its own downstream transport.

It imports only `sedna.runtime`: a `FeatureHost` runs the one feature it is given, with
the `downstream` provider replaced by a sender of its own, so no websocket server is
started and no installed plugin is loaded.
"""

from __future__ import annotations

import argparse
import json
import signal
import threading
from collections.abc import Mapping
from typing import IO, Any

from sedna.runtime import (
    MODELS,
    ControllerContext,
    DeletedFinalStateUnknown,
    Feature,
    FeatureHost,
    GMConfig,
    ResourceEventHandlerFuncs,
    configure_logging,
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


def _node_of(model: Mapping[str, Any]) -> str:
    return str((model.get("metadata", {}).get("annotations") or {}).get(NODE_ANNOTATION) or "")


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
        node = _node_of(model)
        if node:
            self._send(node, "insert", model)

    def _retract(self, model: Mapping[str, Any] | DeletedFinalStateUnknown) -> None:
        obj = model.obj if isinstance(model, DeletedFinalStateUnknown) else model
        node = _node_of(obj)
        if node:
            self._send(node, "delete", obj)

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


ANNOUNCER = Feature("model-announcer", ["Model"], ModelAnnouncer)


def build_host(kubeconfig: str, out: IO[str]) -> FeatureHost:
    config = GMConfig.model_validate({"kubeConfig": kubeconfig})
    host = FeatureHost(config, overrides={"downstream": JsonLineSender(out)})
    host.add(ANNOUNCER)
    return host


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    configure_logging("INFO")  # this app has no logging of its own: use the GM's
    with open(args.out, "a", encoding="utf-8") as out:
        host = build_host(args.kubeconfig, out)
        signal.signal(signal.SIGTERM, lambda *_: host.request_stop("SIGTERM"))
        signal.signal(signal.SIGINT, lambda *_: host.request_stop("SIGINT"))
        host.run()


if __name__ == "__main__":
    main()
