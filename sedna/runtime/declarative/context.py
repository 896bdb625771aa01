"""What a declarative handler gets besides the object: the feature's runtime and lookups."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from sedna.runtime.informers import meta_namespace_key

from .index import Index

if TYPE_CHECKING:
    from sedna.runtime.context import ControllerContext
    from sedna.runtime.events import EventRecorder
    from sedna.runtime.informers import SharedInformer

__all__ = ["Change", "HandlerContext"]

Change = Literal["added", "changed", "status", "unchanged", "deleted"]
"""What changed since the feature's handlers last saw the object (`HandlerContext.change`)."""


@dataclass(frozen=True)
class HandlerContext:
    """The running feature as a handler sees it; one per sync.

    `runtime` is the feature's `ControllerContext` (the API client, informers,
    downstream send, ...) for whatever the declarative layer does not cover.
    """

    runtime: ControllerContext
    key: str
    indexes: Mapping[Index, SharedInformer] = field(default_factory=dict, repr=False)
    old: Mapping[str, Any] | None = field(default=None, repr=False)
    """The version the handlers last saw (None for an added object, and in a report)."""
    change: Change | None = None
    """`added` (not seen before), `changed` (anything but the status), `status` (only
    the status or bookkeeping metadata), `unchanged` (a resync, a related object's
    change, a retry), `deleted`; None in a report handler."""

    @property
    def options(self) -> Any:
        """The feature's validated options (its gm.yaml section)."""
        return self.runtime.options

    @property
    def events(self) -> EventRecorder:
        """The event recorder, for Events of the handler's own (`normal`, `warning`)."""
        return self.runtime.events

    def related(self, index: Index, obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """The cached `index.source` objects whose index names `obj`, sorted by key.

        A dictionary lookup in the shared cache: objects are shared, never change one.
        """
        informer = self.indexes.get(index)
        if informer is None:
            raise ValueError(f"index {index.name} is not declared by this feature")
        return informer.lister.by_index(index.name, meta_namespace_key(obj))
