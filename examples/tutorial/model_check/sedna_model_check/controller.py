"""The controller: every Model that changes is checked, and the verdict is an Event on it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sedna.runtime import (
    MODELS,
    Controller,
    ControllerContext,
    DeletedFinalStateUnknown,
    PermanentError,
    ResourceEventHandlerFuncs,
    Result,
    meta_namespace_key,
)

from .check import problem_of
from .options import ModelCheckOptions

REASON_VALID = "ModelValid"


class ModelCheckController(Controller):
    def __init__(self, ctx: ControllerContext) -> None:
        self.options: ModelCheckOptions = ctx.options
        self.events = ctx.events
        # A shared informer: one list+watch of Models for every feature that asks.
        self.informer = ctx.informers.informer(MODELS)
        super().__init__(
            "model_check",
            workers=ctx.workers,
            metrics=ctx.metrics,
            clock=ctx.clock,
            # A failing sync becomes a Warning Event on the Model it was about.
            events=ctx.events,
            informer=self.informer,
        )
        self.informer.add_event_handler(
            ResourceEventHandlerFuncs(
                add=self._enqueue,
                update=lambda _old, new: self._enqueue(new),
                delete=self._enqueue,
            )
        )

    def _enqueue(self, obj: Mapping[str, Any] | DeletedFinalStateUnknown) -> None:
        self.enqueue(meta_namespace_key(obj))

    def sync(self, key: str) -> Result | None:
        model = self.informer.lister.get_by_key(key)
        if model is None:
            return None  # deleted: nothing to check
        problem = problem_of(model, self.options)
        if problem is not None:
            # Retrying cannot fix a spec; the next edit of the Model enqueues it again.
            raise PermanentError(problem)
        self.events.normal(model, REASON_VALID, f"format {model['spec']['format']} is usable")
        return None

    def start(self) -> None:
        self.run()  # the worker threads; the manager synced the caches before this
