"""Related objects: an index over one kind that names objects of another.

`@feature.index(INCREMENTAL_LEARNING_JOBS, of=MODELS)` over a function job -> Model
names makes two things of it, both on the jobs' shared informer: a cache index (so a
handler finds the jobs of a Model with one dictionary lookup, `ctx.related`) and an
event handler (so a job that starts or stops naming a Model enqueues that Model, and
its `reconcile` handlers run again). The index function runs in the informer's thread
while the cache is updated; an exception there would stop the cache, so it is caught,
logged and reported as a Warning Event on the object, which then relates to nothing.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from loguru import logger

from sedna.runtime.informers import meta_namespace_key
from sedna.runtime.kube import Resource

__all__ = ["REASON_INDEX_ERROR", "Index", "IndexFunction", "guarded"]

Obj = Mapping[str, Any]
IndexFunction = Callable[[Obj], Iterable[str]]
"""object -> the names (same namespace) or `namespace/name` keys of the objects it relates to."""

REASON_INDEX_ERROR = "IndexError"
"""The reason of the Warning Event on an object whose index function raised."""


class _Warner(Protocol):
    def warning(self, obj: Mapping[str, Any], reason: str, message: str) -> None: ...


@dataclass(frozen=True, eq=False)
class Index:
    """An index over `source` objects whose values are keys of `target` objects.

    Made by `DeclarativeFeature.index`; pass it to `HandlerContext.related` to get the
    `source` objects that name a `target` object. Calling it calls the function (so
    it stays testable as the plain function it was).
    """

    name: str
    source: Resource
    target: Resource
    function: IndexFunction

    def __call__(self, obj: Obj) -> Iterable[str]:
        return self.function(obj)

    def keys(self, obj: Obj) -> list[str]:
        """The function's values as keys of `target` objects; raises what it raises."""
        values = self.function(obj)
        if isinstance(values, str) or not isinstance(values, Iterable):
            raise TypeError(f"returned {type(values).__name__}, not an iterable of names")
        namespace = (obj.get("metadata") or {}).get("namespace") or ""
        out: list[str] = []
        for value in values:
            if not isinstance(value, str) or not value:
                raise TypeError(f"returned {value!r} among its names, not a name")
            if "/" in value or not self.target.namespaced or not namespace:
                out.append(value)
            else:
                out.append(f"{namespace}/{value}")
        return out


def guarded(index: Index, events: _Warner | None) -> Callable[[Obj], list[str]]:
    """`index.keys` that never raises: a failure is logged and becomes a Warning Event
    on the object (once per version of it: the cache calls the function for the old
    and the new version, and so does the event handler), and the object relates to
    nothing until it changes."""
    warned: OrderedDict[str, str] = OrderedDict()
    lock = threading.Lock()

    def keys(obj: Obj) -> list[str]:
        try:
            return index.keys(obj)
        except Exception as exc:
            key = meta_namespace_key(obj)
            version = str((obj.get("metadata") or {}).get("resourceVersion", ""))
            with lock:
                if warned.get(key) == version:
                    return []
                warned[key] = version
                warned.move_to_end(key)
                while len(warned) > 4096:  # bounded: objects come and go
                    warned.popitem(last=False)
            message = f"index {index.name} raised {type(exc).__name__}: {exc}"
            logger.warning("{} {}: {}; it relates to nothing", index.source.kind, key, message)
            if events is not None:
                events.warning(_with_kind(obj, index.source), REASON_INDEX_ERROR, message)
            return []

    return keys


def _with_kind(obj: Obj, res: Resource) -> Obj:
    """An object from a list carries no kind; an Event's involvedObject needs one."""
    if obj.get("kind"):
        return obj
    return {**obj, "kind": res.kind, "apiVersion": res.api_version}
