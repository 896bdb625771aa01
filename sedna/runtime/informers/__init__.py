"""Shared informers, listers and cache keys (client-go's machinery, threaded).

Cached objects are shared by every consumer: ``copy.deepcopy`` before changing
one. Set ``SEDNA_CACHE_MUTATION_DETECTOR=1`` in tests to catch violations.
"""

from __future__ import annotations

from .backoff import Backoff, BackoffPolicy
from .factory import SharedInformerFactory, worker_label_key
from .handlers import EventHandler, FilteringResourceEventHandler, ResourceEventHandlerFuncs
from .informer import HandlerRegistration, InformerOptions, InformerStats, SharedInformer
from .keys import DeletedFinalStateUnknown, meta_namespace_key, split_key
from .mutation import CacheMutationError, MutationDetector
from .selectors import (
    Requirement,
    Selector,
    SelectorError,
    as_selector,
    parse_selector,
    selector_from_label_selector,
)
from .store import (
    NAMESPACE_INDEX,
    OWNER_UID_INDEX,
    Indexer,
    IndexFunc,
    Lister,
    controller_owner_uids,
    namespace_index,
)
from .transforms import Transform, strip_bookkeeping, worker_pod_transform

__all__ = [
    "NAMESPACE_INDEX",
    "OWNER_UID_INDEX",
    "Backoff",
    "BackoffPolicy",
    "CacheMutationError",
    "DeletedFinalStateUnknown",
    "EventHandler",
    "FilteringResourceEventHandler",
    "HandlerRegistration",
    "IndexFunc",
    "Indexer",
    "InformerOptions",
    "InformerStats",
    "Lister",
    "MutationDetector",
    "Requirement",
    "ResourceEventHandlerFuncs",
    "Selector",
    "SelectorError",
    "SharedInformer",
    "SharedInformerFactory",
    "Transform",
    "as_selector",
    "controller_owner_uids",
    "meta_namespace_key",
    "namespace_index",
    "parse_selector",
    "selector_from_label_selector",
    "split_key",
    "strip_bookkeeping",
    "worker_label_key",
    "worker_pod_transform",
]
