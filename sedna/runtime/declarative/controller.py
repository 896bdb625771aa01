"""The machinery under the declarative handlers: one `Controller` per kind.

Nothing here is new machinery: each kind's handlers run in a `Controller` (one
rate-limited workqueue, one key per object, its backoff and Warning Events) fed by the
kind's shared informer, and status is written with `update_status_with_retry`. The
sync is level-triggered: events only enqueue keys, and the sync reads the current
object from the lister and compares it with the version its handlers last saw, kept
in memory (never as an annotation in the user's object):

- no version seen yet: `on_add` handlers (after a restart every object is new once);
- the object changed apart from its status: `on_change` handlers get (old, new);
- in every sync of a live object: `reconcile` handlers (add, change, resync, a
  related object's change);
- the object is gone: `on_delete` handlers get its last known version (the final
  one the informer had, even if no other handler saw it).

The handlers of one sync succeed or are retried together: the statuses of those that
succeeded are written, the first error is raised to the `Controller` (Warning Event,
backoff), and the version is not recorded as seen, so the same handlers run again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from loguru import logger

from sedna.runtime.controller import Controller, Result
from sedna.runtime.informers import (
    DeletedFinalStateUnknown,
    ResourceEventHandlerFuncs,
    SharedInformer,
    meta_namespace_key,
    split_key,
)
from sedna.runtime.kube import NotFound, Resource, update_status_with_retry

from .context import Change, HandlerContext
from .handlers import Handler, ReportHandler, call_handler
from .index import Index, guarded
from .merge import merge_patch

if TYPE_CHECKING:
    from sedna.runtime.context import ControllerContext
    from sedna.runtime.informers.informer import HandlerRegistration
    from sedna.runtime.upstream import UpstreamMessage

__all__ = ["DeclarativeController", "KindController"]

Obj = Mapping[str, Any]
_VOLATILE_METADATA = ("resourceVersion", "managedFields", "generation")


def _uid(obj: Obj) -> object:
    return (obj.get("metadata") or {}).get("uid")


def _essence(obj: Obj) -> dict[str, Any]:
    """What a change handler is about: the object without its status and the metadata
    every write bumps (so the feature's own status writes are no change)."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _VOLATILE_METADATA}
    return {**{k: v for k, v in obj.items() if k != "status"}, "metadata": meta}


def _change(last: Obj | None, obj: Obj) -> Change:
    if last is None:
        return "added"
    if _essence(last) != _essence(obj):
        return "changed"
    rv = (last.get("metadata") or {}).get("resourceVersion")
    return "status" if rv != (obj.get("metadata") or {}).get("resourceVersion") else "unchanged"


def _unwrap(obj: Obj | DeletedFinalStateUnknown) -> Obj:
    return obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj


class KindController(Controller):
    """The handlers of one kind, run by one `Controller` over its shared informer."""

    def __init__(
        self,
        name: str,
        ctx: ControllerContext,
        resource: Resource,
        handlers: Sequence[Handler],
        indexes: Mapping[Index, SharedInformer],
    ) -> None:
        self.ctx = ctx
        self.resource = resource
        self.handlers = tuple(handlers)
        self.indexes = indexes
        self.informer = ctx.informers.informer(resource)
        self.client = ctx.kube.resource(resource)
        self._lock = threading.Lock()
        self._seen: dict[str, Obj] = {}  # the version the handlers last saw, per key
        self._gone: dict[str, Obj] = {}  # the final version of a deleted object
        super().__init__(
            name,
            workers=ctx.workers,
            metrics=ctx.metrics,
            clock=ctx.clock,
            events=ctx.events,
            lookup=self._last_known,
        )
        self.registration: HandlerRegistration = self.informer.add_event_handler(
            ResourceEventHandlerFuncs(
                add=lambda obj: self.enqueue(meta_namespace_key(obj)),
                update=lambda _old, new: self.enqueue(meta_namespace_key(new)),
                delete=self._on_delete,
            )
        )

    def _on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        key = meta_namespace_key(obj)
        with self._lock:
            self._gone[key] = _unwrap(obj)
        self.enqueue(key)

    def _last_known(self, key: str) -> Obj | None:
        """The object a Warning Event goes on: the cached one, else the one last seen."""
        obj = self.informer.lister.get_by_key(key)
        if obj is None:
            with self._lock:
                obj = self._gone.get(key) or self._seen.get(key)
        if obj is None or obj.get("kind"):
            return obj
        return {**obj, "kind": self.resource.kind, "apiVersion": self.resource.api_version}

    def _run(self, event: str, *args: Any) -> tuple[list[Mapping[str, Any]], Exception | None]:
        patches: list[Mapping[str, Any]] = []
        error: Exception | None = None
        for handler in self.handlers:
            if handler.event != event:
                continue
            try:
                patch = call_handler(handler, *args)
            except Exception as exc:
                error = error or exc
                continue
            if patch:
                patches.append(patch)
        return patches, error

    def sync(self, key: str) -> Result | None:
        obj = self.informer.lister.get_by_key(key)
        with self._lock:
            last, gone = self._seen.get(key), self._gone.get(key)
        final = gone or last
        if final is not None and (obj is None or _uid(obj) != _uid(final)):
            # gone, or deleted and created again between two syncs: the old one is gone
            ctx = HandlerContext(self.ctx, key, self.indexes, change="deleted")
            _, error = self._run("delete", final, ctx)
            if error is not None:
                raise error
            with self._lock:
                self._seen.pop(key, None)
                self._gone.pop(key, None)
            last = None
        if obj is None:
            return None
        change = _change(last, obj)
        ctx = HandlerContext(self.ctx, key, self.indexes, old=last, change=change)
        patches, error = self._run("add", obj, ctx) if change == "added" else ([], None)
        if change == "changed":
            patches, error = self._run("change", last, obj, ctx)
        more, reconcile_error = self._run("reconcile", obj, ctx)
        self._write_status(obj, [*patches, *more])
        if error is not None or reconcile_error is not None:
            raise error or reconcile_error  # type: ignore[misc]
        with self._lock:
            # a final version recorded meanwhile stays: the next sync's delete gets it
            self._seen[key] = obj
        return None

    def _write_status(self, obj: Obj, patches: Sequence[Mapping[str, Any]]) -> None:
        """Merge the patches into `.status` with the conflict-safe status write; no
        request when they change nothing."""
        if not patches:
            return

        def merged(status: Any) -> Any:
            for patch in patches:
                status = merge_patch(status, patch)
            return status

        current = obj.get("status") or {}
        if merged(current) == current:
            return

        def mutate(fresh: dict[str, Any]) -> bool:
            before = fresh.get("status") or {}
            after = merged(before)
            if after == before:
                return False
            fresh["status"] = after
            return True

        namespace, name = split_key(meta_namespace_key(obj))
        try:
            update_status_with_retry(self.client, namespace, name, mutate, current=obj)
        except NotFound:  # deleted meanwhile: its delete event is on its way
            logger.debug(
                "{} {}/{} is gone; status not written", self.resource.kind, namespace, name
            )


class DeclarativeController:
    """A declarative feature at run time: its kinds' controllers and its indexes."""

    def __init__(
        self,
        ctx: ControllerContext,
        name: str,
        handlers: Sequence[Handler],
        indexes: Sequence[Index],
        reports: Sequence[tuple[Resource, ReportHandler]] = (),
    ) -> None:
        informers: dict[Index, SharedInformer] = {}
        keys_of: dict[Index, Callable[[Obj], list[str]]] = {}
        for index in indexes:
            informer = ctx.informers.informer(index.source)
            keys_of[index] = guarded(index, ctx.events)
            if not informer.indexer.has_indexer(index.name):
                informer.add_indexer(index.name, keys_of[index])
            informers[index] = informer
        kinds: dict[Resource, list[Handler]] = {}
        for handler in handlers:
            kinds.setdefault(handler.resource, []).append(handler)
        self.controllers: dict[Resource, KindController] = {
            res: KindController(
                name if len(kinds) == 1 else f"{name}-{res.plural}", ctx, res, own, informers
            )
            for res, own in kinds.items()
        }
        self._related: list[tuple[SharedInformer, HandlerRegistration]] = []
        for index in indexes:
            target = self.controllers[index.target]
            informer = informers[index]
            related = _related_handler(keys_of[index], target)
            self._related.append((informer, informer.add_event_handler(related)))

        for res, report in reports:
            ctx.upstream.register(res.kind, _report_handler(ctx, informers, report))

    def start(self) -> None:
        for controller in self.controllers.values():
            controller.run()

    def stop(self) -> None:
        for informer, registration in self._related:
            informer.remove_event_handler(registration)
        for controller in self.controllers.values():
            controller.informer.remove_event_handler(controller.registration)
            controller.stop()


def _related_handler(
    keys: Callable[[Obj], list[str]], target: Controller
) -> ResourceEventHandlerFuncs:
    """Enqueue every object a related object names, before and after its change."""

    def enqueue(*objs: Obj) -> None:
        for key in {k for obj in objs for k in keys(obj)}:
            target.enqueue(key)

    def update(old: Obj, new: Obj) -> None:
        old_rv = (old.get("metadata") or {}).get("resourceVersion")
        if old_rv != (new.get("metadata") or {}).get("resourceVersion"):  # not a resync
            enqueue(old, new)

    return ResourceEventHandlerFuncs(
        add=enqueue, update=update, delete=lambda obj: enqueue(_unwrap(obj))
    )


def _report_handler(
    ctx: ControllerContext, informers: Mapping[Index, SharedInformer], handler: ReportHandler
) -> Callable[[UpstreamMessage], None]:
    """A report handler as the upstream registry calls it: with a context of its own."""

    def handle(msg: UpstreamMessage) -> None:
        key = f"{msg.namespace}/{msg.name}" if msg.namespace else msg.name
        handler(msg, HandlerContext(ctx, key, informers))

    return handle
