"""The object store: every object by resource, namespace and name, plus the global
resourceVersion counter.

It is deliberately dumb: it assigns resourceVersions, keeps indexes (uid, owner uid)
and emits events; what a write *means* (defaulting, conflicts, finalizers) is decided
in ``operations``. Every write happens on the server's loop thread, so there is no lock;
drafts of large writes worked out on the write pool (``writes``) may ``get`` (single
dict lookups, atomic under the GIL), and the loop checks what they read again before
it commits them. Stored dicts are never mutated after they are stored: writers replace
them, which lets readers serialize them and watchers share them without copies.

Durable first: a write goes to the persister before memory, the indexes and the watch
feed see it. A write the persister refuses (a full disk) raises a 500 and changes
nothing, so what a client can read is what a restart would find; kube-apiserver
answers an etcd that cannot write the same way (500, ``etcdserver: mvcc: database space
exceeded``). ``health`` keeps the failure for ``/readyz``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from .bodies import LARGE_BYTES, Encoded, encode_object
from .errors import APIError
from .keyorder import KeyOrder, Snapshot, etcd_key, key_range, object_key
from .store_health import StoreHealth, describe
from .watch import Event, WatchHub

Key = tuple[str, str]
ObjId = tuple[Key, str, str]  # (resource key, namespace, name)


class Persister(Protocol):
    """Write-through storage (``persistence.SQLitePersister``)."""

    def save(
        self, key: Key, ns: str, name: str, obj: dict[str, Any], rv: int, raw: bytes | None = None
    ) -> None: ...

    def delete(self, key: Key, ns: str, name: str, rv: int) -> None: ...

    def probe(self, rv: int) -> None: ...


def write_failed(exc: BaseException) -> APIError:
    """kube-apiserver's answer when its storage refuses a write: 500, nothing changed."""
    return APIError(
        500,
        "InternalError",
        f"Internal error occurred: {describe(exc)}; nothing was changed, retry later",
    )


class Store:
    """In-memory objects with a change feed."""

    def __init__(self, hub: WatchHub, persister: Persister | None = None) -> None:
        self.hub = hub
        self.persister = persister
        self.health = StoreHealth()
        self.rv = 1
        self.objects: dict[Key, dict[tuple[str, str], dict[str, Any]]] = {}
        # each resource's keys in etcd's order: lists and pages read ranges of it
        self.order: dict[Key, KeyOrder] = {}
        self.by_uid: dict[str, ObjId] = {}
        # owner uid -> dependents' ids; garbage collection walks this
        self.dependents: dict[str, set[ObjId]] = {}
        # objects whose JSON passes LARGE_BYTES: their writes are worked out off the loop
        self.large: set[ObjId] = set()

    def get(self, key: Key, ns: str, name: str) -> dict[str, Any] | None:
        """The stored object or None."""
        bucket = self.objects.get(key)
        return bucket.get((ns, name)) if bucket else None

    def list(self, key: Key, ns: str | None = None) -> list[dict[str, Any]]:
        """Objects of a resource, in one namespace or all, in etcd's key order.

        etcd sorts the bytes of ``namespace/name``, so ``a-b/x`` comes before ``a/y``;
        paginated lists resume by that key, so plain lists use the same order.
        """
        bucket = self.objects.get(key)
        if not bucket:
            return []
        if ns == "":  # cluster-scoped objects: the keys without a namespace
            return [o for (n, _), o in sorted(bucket.items()) if n == ""]
        lo, hi = key_range(ns, "")
        return [bucket[object_key(k)] for k in self.order[key].between(lo, hi)]

    def snapshot(self, key: Key, rv: int) -> Snapshot | None:
        """The objects of a resource as they were at ``rv``, None when that is unknowable.

        Nothing is copied: the snapshot reads the live objects through the state at
        ``rv`` of each object written since, taken from the retained events (each
        keeps the object's previous state), so it costs the events since ``rv``, not
        the resource. None when events after ``rv`` were compacted away, or ``rv`` is
        ahead of this store (a token from before a restart without persistence).
        """
        if rv > self.rv or self.hub.too_old(rv):
            return None
        changed: dict[tuple[str, str], dict[str, Any] | None] = {}
        for ev in self.hub.since(key, rv):
            # the oldest event after rv holds the state at rv
            changed.setdefault((ev.namespace, ev.obj["metadata"]["name"]), ev.old)
        return Snapshot(self.objects.get(key, {}), self._order(key), changed)

    def _order(self, key: Key) -> KeyOrder:
        order = self.order.get(key)
        if order is None:
            order = self.order[key] = KeyOrder()
        return order

    def lookup_uid(self, uid: str) -> tuple[ObjId, dict[str, Any]] | None:
        """Find an object by uid (owners are referenced by uid)."""
        oid = self.by_uid.get(uid)
        if oid is None:
            return None
        obj = self.get(*oid)
        return (oid, obj) if obj is not None else None

    def resource_keys(self) -> Iterable[Key]:
        """Resources that have (or had) objects."""
        return list(self.objects)

    def _durable(self, write: Callable[[Persister], None]) -> None:
        """Run one persister write; a failure becomes a 500 and marks the store unhealthy."""
        if self.persister is None:
            return
        try:
            write(self.persister)
        except (sqlite3.Error, OSError) as exc:
            self.health.failed(describe(exc))
            raise write_failed(exc) from None
        self.health.succeeded()

    def probe(self) -> None:
        """A write of nothing new: raises while the persister cannot write."""
        if self.persister is not None:
            self.persister.probe(self.rv)

    def is_large(self, key: Key, ns: str, name: str) -> bool:
        """Whether the stored object's JSON passes ``LARGE_BYTES``."""
        return (key, ns, name) in self.large

    def put(
        self,
        key: Key,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        encoded: Encoded | None = None,
    ) -> dict[str, Any]:
        """Store a new version (ADDED if ``old`` is None, else MODIFIED) with a fresh rv.

        ``encoded``: ``obj`` already encoded (off the loop) but for its version, which
        is spliced in here; else ``obj`` is encoded here.
        """
        rv = self.rv + 1
        meta = obj["metadata"]
        previous_rv = meta.get("resourceVersion")
        meta["resourceVersion"] = str(rv)
        try:
            # refuse what could not be served back, before storing
            raw = encode_object(obj) if encoded is None else encoded.with_rv(str(rv))
            ns = meta.get("namespace", "")
            name = meta["name"]
            self._durable(lambda p: p.save(key, ns, name, obj, rv, raw))
        except APIError:
            if previous_rv is None:
                meta.pop("resourceVersion", None)
            else:
                meta["resourceVersion"] = previous_rv
            raise
        self.rv = rv
        bucket = self.objects.setdefault(key, {})
        if (ns, name) not in bucket:
            self._order(key).add(etcd_key((ns, name)))
        bucket[(ns, name)] = obj
        oid = (key, ns, name)
        if old is not None:
            self._unindex(oid, old)
        self._index(oid, obj, len(raw))
        self.hub.publish(Event("ADDED" if old is None else "MODIFIED", key, ns, obj, old, rv, raw))
        return obj

    def remove(self, key: Key, obj: dict[str, Any]) -> dict[str, Any]:
        """Delete an object; the DELETED event carries its last state with a new rv."""
        meta = obj["metadata"]
        ns = meta.get("namespace", "")
        name = meta["name"]
        rv = self.rv + 1
        self._durable(lambda p: p.delete(key, ns, name, rv))
        self.rv = rv
        bucket = self.objects.get(key, {})
        if bucket.pop((ns, name), None) is not None:
            self._order(key).discard(etcd_key((ns, name)))
        self._unindex((key, ns, name), obj)
        final = dict(obj)
        final["metadata"] = dict(meta, resourceVersion=str(rv))
        self.hub.publish(Event("DELETED", key, ns, final, obj, rv))
        return final

    def load(self, key: Key, obj: dict[str, Any], size: int = 0) -> None:
        """Insert an object as it was persisted (no event, no new rv); ``size``: its JSON's."""
        meta = obj["metadata"]
        oid = (key, meta.get("namespace", ""), meta["name"])
        bucket = self.objects.setdefault(key, {})
        if (oid[1], oid[2]) not in bucket:
            self._order(key).add(etcd_key((oid[1], oid[2])))
        bucket[(oid[1], oid[2])] = obj
        self._index(oid, obj, size)

    def _index(self, oid: ObjId, obj: dict[str, Any], size: int) -> None:
        if size > LARGE_BYTES:
            self.large.add(oid)
        else:
            self.large.discard(oid)
        meta = obj["metadata"]
        uid = meta.get("uid")
        if uid:
            self.by_uid[uid] = oid
        for ref in meta.get("ownerReferences") or ():
            ouid = ref.get("uid")
            if ouid:
                self.dependents.setdefault(ouid, set()).add(oid)

    def _unindex(self, oid: ObjId, obj: dict[str, Any]) -> None:
        self.large.discard(oid)
        meta = obj["metadata"]
        uid = meta.get("uid")
        if uid and self.by_uid.get(uid) == oid:
            del self.by_uid[uid]
        for ref in meta.get("ownerReferences") or ():
            deps = self.dependents.get(ref.get("uid", ""))
            if deps is not None:
                deps.discard(oid)
                if not deps:
                    del self.dependents[ref["uid"]]
