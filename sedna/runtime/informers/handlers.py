"""Event handler interface for shared informers.

Handlers receive the cache's own objects (shared by every consumer): they must
``copy.deepcopy`` before changing anything. The usual handler only turns the
object into a key and enqueues it, which needs no copy at all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from .keys import DeletedFinalStateUnknown

__all__ = ["EventHandler", "FilteringResourceEventHandler", "ResourceEventHandlerFuncs"]

Obj = Mapping[str, Any]


@runtime_checkable
class EventHandler(Protocol):
    """What an informer calls, in event order, from its dispatch thread."""

    def on_add(self, obj: Obj) -> None:
        """An object entered the cache (or the handler was added late)."""
        ...

    def on_update(self, old: Obj, new: Obj) -> None:
        """An object changed; ``old is new`` content-wise on a periodic resync."""
        ...

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        """An object left the cache; a tombstone if the delete itself was missed."""
        ...


@dataclass(frozen=True)
class ResourceEventHandlerFuncs:
    """An ``EventHandler`` from optional callables, as client-go's struct of funcs."""

    add: Callable[[Obj], None] | None = None
    update: Callable[[Obj, Obj], None] | None = None
    delete: Callable[[Obj | DeletedFinalStateUnknown], None] | None = None

    def on_add(self, obj: Obj) -> None:
        if self.add is not None:
            self.add(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        if self.update is not None:
            self.update(old, new)

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        if self.delete is not None:
            self.delete(obj)


@dataclass(frozen=True)
class FilteringResourceEventHandler:
    """Pass only objects accepted by ``filter``; an update crossing the filter
    becomes an add or a delete, so the inner handler sees a consistent set."""

    filter: Callable[[Obj], bool]
    handler: EventHandler

    def on_add(self, obj: Obj) -> None:
        if self.filter(obj):
            self.handler.on_add(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        was, now = self.filter(old), self.filter(new)
        if was and now:
            self.handler.on_update(old, new)
        elif now:
            self.handler.on_add(new)
        elif was:
            self.handler.on_delete(old)

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        inner = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if self.filter(inner):
            self.handler.on_delete(obj)
