"""The informer cache: a thread-safe keyed store with indexes, and its read view.

Like client-go's ``threadSafeMap`` + ``Indexer``: the informer's watch thread
writes, any thread reads. Objects are stored as the dicts the server sent and
handed out without copying, which is why callers must not mutate them (see the
mutation detector).
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .keys import split_key
from .selectors import Selector, as_selector

__all__ = [
    "NAMESPACE_INDEX",
    "OWNER_UID_INDEX",
    "IndexFunc",
    "Indexer",
    "Lister",
    "controller_owner_uids",
    "namespace_index",
]

Obj = Mapping[str, Any]
IndexFunc = Callable[[Obj], Iterable[str]]

NAMESPACE_INDEX = "namespace"
OWNER_UID_INDEX = "controller-owner-uid"


def namespace_index(obj: Obj) -> Iterable[str]:
    """Index value: the object's namespace ("" for cluster-scoped objects)."""
    meta = obj.get("metadata")
    # exact types first: every cached object is indexed, and isinstance on an ABC is slow
    ns = meta.get("namespace") if type(meta) is dict or isinstance(meta, Mapping) else None
    return (ns if type(ns) is str or isinstance(ns, str) else "",)


def controller_owner_uids(obj: Obj) -> Iterable[str]:
    """Index values: the UID of the owner reference marked ``controller: true``.

    Only the controller reference counts, as in client-go's ``GetControllerOf``:
    a pod merely owned (not controlled) by a job is not that job's to manage.
    """
    meta = obj.get("metadata")
    refs = meta.get("ownerReferences") if type(meta) is dict or isinstance(meta, Mapping) else None
    if not isinstance(refs, list):
        return ()
    uids: list[str] = []
    for ref in refs:
        if (type(ref) is dict or isinstance(ref, Mapping)) and ref.get("controller") is True:
            uid = ref.get("uid")
            if isinstance(uid, str):
                uids.append(uid)
    return uids


class Indexer:
    """Keyed objects plus secondary indexes (index name -> value -> keys)."""

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._lock = threading.RLock()
        self._items: dict[str, Obj] = {}
        self._funcs: dict[str, IndexFunc] = dict(indexers or {})
        self._indices: dict[str, dict[str, set[str]]] = {name: {} for name in self._funcs}

    # -- writes (the informer's thread) ------------------------------------

    def add_indexer(self, name: str, fn: IndexFunc) -> None:
        """Add an index and build it over the current contents."""
        with self._lock:
            if name in self._funcs:
                raise ValueError(f"indexer {name!r} already exists")
            self._funcs[name] = fn
            index: dict[str, set[str]] = {}
            self._indices[name] = index
            for key, obj in self._items.items():
                for value in fn(obj):
                    index.setdefault(value, set()).add(key)

    def put(self, key: str, obj: Obj) -> Obj | None:
        """Insert or replace; return the previous object."""
        with self._lock:
            old = self._items.get(key)
            self._items[key] = obj
            if self._funcs:
                self._reindex(key, old, obj)
            return old

    def delete(self, key: str) -> Obj | None:
        """Remove; return the removed object (None if absent)."""
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None and self._funcs:
                self._reindex(key, old, None)
            return old

    def _reindex(self, key: str, old: Obj | None, new: Obj | None) -> None:
        if old is None and new is not None:  # a new key (every object of a first list)
            for name, fn in self._funcs.items():
                index = self._indices[name]
                for value in fn(new):
                    keys = index.get(value)
                    if keys is None:
                        index[value] = {key}
                    else:
                        keys.add(key)
            return
        for name, fn in self._funcs.items():
            index = self._indices[name]
            old_values = set(fn(old)) if old is not None else set()
            new_values = set(fn(new)) if new is not None else set()
            for value in old_values - new_values:
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]
            for value in new_values - old_values:
                index.setdefault(value, set()).add(key)

    # -- reads (any thread) -------------------------------------------------

    def get(self, key: str) -> Obj | None:
        """The cached object for ``key``."""
        return self._items.get(key)

    def keys(self) -> list[str]:
        """A snapshot of the keys."""
        with self._lock:
            return list(self._items)

    def items(self) -> list[tuple[str, Obj]]:
        """A snapshot of (key, object) pairs."""
        with self._lock:
            return list(self._items.items())

    def values(self) -> list[Obj]:
        """A snapshot of the objects."""
        with self._lock:
            return list(self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def by_index(self, name: str, value: str) -> list[Obj]:
        """Objects whose index ``name`` yields ``value``."""
        with self._lock:
            try:
                index = self._indices[name]
            except KeyError:
                raise KeyError(f"no indexer named {name!r}") from None
            keys = index.get(value)
            if not keys:
                return []
            return [self._items[k] for k in sorted(keys)]

    def index_keys(self, name: str, value: str) -> list[str]:
        """Keys whose index ``name`` yields ``value``."""
        with self._lock:
            try:
                index = self._indices[name]
            except KeyError:
                raise KeyError(f"no indexer named {name!r}") from None
            return sorted(index.get(value, ()))

    def has_indexer(self, name: str) -> bool:
        """Whether an index of that name exists."""
        return name in self._funcs


class Lister:
    """Read-only view of one informer's cache.

    Returned objects are the cache's own: ``copy.deepcopy`` before changing them
    (``SEDNA_CACHE_MUTATION_DETECTOR=1`` catches violations in tests).
    """

    def __init__(self, indexer: Indexer, namespaced: bool = True) -> None:
        self._indexer = indexer
        self._namespaced = namespaced

    def get(self, namespace: str | None, name: str) -> Obj | None:
        """Look up by namespace/name (namespace ignored for cluster-scoped kinds)."""
        if self._namespaced and namespace:
            return self._indexer.get(f"{namespace}/{name}")
        return self._indexer.get(name)

    def get_by_key(self, key: str) -> Obj | None:
        """Look up by a workqueue key (``namespace/name`` or ``name``)."""
        split_key(key)
        return self._indexer.get(key)

    def list(
        self,
        namespace: str | None = None,
        selector: Mapping[str, str] | str | Selector | None = None,
    ) -> builtins.list[Obj]:
        """Objects in ``namespace`` (all if None/"") whose labels match ``selector``."""
        sel = as_selector(selector)
        if namespace and self._namespaced:
            objs = self._indexer.by_index(NAMESPACE_INDEX, namespace)
        else:
            objs = self._indexer.values()
        if sel is None:
            return objs
        return [o for o in objs if sel.matches_object(o)]

    def by_owner_uid(self, uid: str) -> builtins.list[Obj]:
        """Objects whose controller owner reference has this UID."""
        return self._indexer.by_index(OWNER_UID_INDEX, uid)

    def by_index(self, name: str, value: str) -> builtins.list[Obj]:
        """Objects from a custom index added with ``SharedInformer.add_indexer``."""
        return self._indexer.by_index(name, value)

    def keys(self) -> builtins.list[str]:
        """Every cached key."""
        return self._indexer.keys()

    def __len__(self) -> int:
        return len(self._indexer)
