"""The handlers a declarative feature registers, and how one is called.

A handler is a plain function. What it returns is checked before anything is
written, and whatever it raises is re-raised naming it, so the Warning Event on the
object says which handler failed and why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from sedna.runtime.controller import PermanentError, TemporaryError
from sedna.runtime.kube import Resource

from .merge import StatusPatch, check_patch

if TYPE_CHECKING:
    from sedna.runtime.upstream import UpstreamMessage

    from .context import HandlerContext

__all__ = [
    "ChangeHandler",
    "DeleteHandler",
    "Handler",
    "HandlerError",
    "ObjectHandler",
    "ReportHandler",
    "call_handler",
    "writes_status",
]

Obj = Mapping[str, Any]
ObjectHandler = Callable[[Obj, "HandlerContext"], StatusPatch]
"""An add or reconcile handler: (object, ctx) -> status fields to merge, or None."""
ChangeHandler = Callable[[Obj, Obj, "HandlerContext"], StatusPatch]
"""A change handler: (old, new, ctx) -> status fields to merge, or None."""
DeleteHandler = Callable[[Obj, "HandlerContext"], None]
"""A delete handler: (the last known object, ctx) -> None."""
ReportHandler = Callable[["UpstreamMessage", "HandlerContext"], None]
"""A report handler: (an LC's report for an object of the kind, ctx) -> None."""

Event = Literal["add", "change", "delete", "reconcile"]


class HandlerError(Exception):
    """A handler raised, or returned what cannot be a status; the message names it."""

    def __init__(self, handler: str, problem: str) -> None:
        super().__init__(f"handler {handler} {problem}")
        self.handler = handler


@dataclass(frozen=True, eq=False)
class Handler:
    """One registered handler: when it runs, on which kind, and whether it writes status."""

    event: Event
    resource: Resource
    function: Callable[..., Any]
    name: str
    writes_status: bool


def writes_status(function: Callable[..., Any]) -> bool:
    """Whether a handler may return a status: not when it is annotated `-> None`.

    The annotation decides the RBAC too: a kind whose handlers all return None gets no
    `<plural>/status` access, so the handler's own type is the declaration.
    """
    annotations = getattr(function, "__annotations__", None) or {}
    return annotations.get("return", "unannotated") not in (None, type(None), "None")


def call_handler(handler: Handler, *args: Any) -> StatusPatch:
    """Call `handler`; errors come back naming it, a bad return value is an error."""
    try:
        value = handler.function(*args)
    except PermanentError as exc:
        raise PermanentError(f"handler {handler.name}: {exc}") from exc
    except TemporaryError as exc:
        raise TemporaryError(f"handler {handler.name}: {exc}", delay=exc.delay) from exc
    except Exception as exc:
        raise HandlerError(handler.name, f"raised {type(exc).__name__}: {exc}") from exc
    if value is None:
        return None
    if handler.event == "delete":
        raise HandlerError(handler.name, "returned a status for an object that is gone")
    if not handler.writes_status:
        raise HandlerError(handler.name, "returned a status but is annotated -> None")
    problem = check_patch(value)
    if problem is not None:
        raise HandlerError(handler.name, problem)
    return value  # type: ignore[no-any-return]
