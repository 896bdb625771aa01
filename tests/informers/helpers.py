"""Shared helpers for the informer tests: a recording handler, waits, objects."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from sedna.runtime.informers import DeletedFinalStateUnknown

Obj = Mapping[str, Any]


def wait_until(pred: Callable[[], bool], timeout: float = 5.0, what: str = "condition") -> None:
    """Poll ``pred`` (real time) and fail the test with ``what`` if it never holds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def name_of(obj: Obj | DeletedFinalStateUnknown) -> str:
    inner = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
    return str(inner["metadata"]["name"])


class Recorder:
    """An EventHandler that records ``(op, name, payload)`` in call order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, Any]] = []
        self.lock = threading.Lock()
        self.threads: set[str] = set()

    def _rec(self, op: str, name: str, payload: Any) -> None:
        with self.lock:
            self.events.append((op, name, payload))
            self.threads.add(threading.current_thread().name)

    def on_add(self, obj: Obj) -> None:
        self._rec("add", name_of(obj), obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        self._rec("update", name_of(new), (old, new))

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        self._rec("delete", name_of(obj), obj)

    def ops(self) -> list[tuple[str, str]]:
        with self.lock:
            return [(op, name) for op, name, _ in self.events]

    def of(self, op: str) -> list[tuple[str, str, Any]]:
        with self.lock:
            return [e for e in self.events if e[0] == op]


def pod(
    name: str,
    labels: Mapping[str, str] | None = None,
    owner: Obj | None = None,
    controller: bool = True,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": dict(labels or {})}
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": owner["apiVersion"],
                "kind": owner["kind"],
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": controller,
                "blockOwnerDeletion": True,
            }
        ]
    return {"metadata": meta, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def server_state(items: list[dict[str, Any]]) -> dict[str, str]:
    """name -> resourceVersion, to compare a cache with the server."""
    return {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in items}


def cache_state(objs: list[Obj]) -> dict[str, str]:
    return {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in objs}
