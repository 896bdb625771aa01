"""Declarative features: handlers for add/change/delete of a kind, related objects
through indexes, status from return values, RBAC from the declaration.

A thin layer over the runtime's informers, `Controller` and status writes; it adds no
state to users' objects and changes nothing about how work is queued or retried.
"""

from __future__ import annotations

from .context import Change, HandlerContext
from .feature import DeclarativeFeature
from .handlers import ChangeHandler, DeleteHandler, HandlerError, ObjectHandler, ReportHandler
from .index import REASON_INDEX_ERROR, Index, IndexFunction
from .merge import StatusPatch, merge_patch

__all__ = [
    "REASON_INDEX_ERROR",
    "Change",
    "ChangeHandler",
    "DeclarativeFeature",
    "DeleteHandler",
    "HandlerContext",
    "HandlerError",
    "Index",
    "IndexFunction",
    "ObjectHandler",
    "ReportHandler",
    "StatusPatch",
    "merge_patch",
]
