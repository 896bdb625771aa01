"""Objects of one resource in etcd's key order, and a list snapshot read through it.

etcd keeps keys sorted, so kube-apiserver serves a page of a paginated list as one
range read from the continue token's key: its cost is the page, not the resource. The
store keeps the same order in a sorted index per resource (``KeyOrder``), so a page
here costs O(log n + page) too, where a pass over the whole resource for every page
made listing n objects in pages of p cost O(n²/p).

Keys are etcd's relative keys: ``namespace/name`` for namespaced objects, ``name`` for
cluster-scoped ones; names hold no ``/``, so a key splits back into its object id.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from sortedcontainers import SortedList

ObjKey = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects


def etcd_key(oid: ObjKey) -> str:
    """The object's key below its resource's prefix, as etcd sorts it (by bytes)."""
    ns, name = oid
    return f"{ns}/{name}" if ns else name


def object_key(key: str) -> ObjKey:
    """The inverse of ``etcd_key``."""
    ns, sep, name = key.partition("/")
    return (ns, name) if sep else ("", key)


def key_range(scope: str | None, start: str) -> tuple[str, str | None]:
    """``[lo, hi)`` of etcd keys a list of ``scope`` (a namespace, None for all) covers
    from its relative key ``start`` on; ``hi`` None means to the end."""
    if scope is None:
        return start, None
    # "0" is the byte after "/": every "ns/..." key sorts below "ns0"
    return f"{scope}/{start}", f"{scope}0"


class KeyOrder:
    """The sorted keys of one resource's objects (adds and deletes in O(log n))."""

    def __init__(self) -> None:
        self._keys: SortedList[str] = SortedList()

    def __len__(self) -> int:
        return len(self._keys)

    def add(self, key: str) -> None:
        self._keys.add(key)

    def discard(self, key: str) -> None:
        self._keys.discard(key)

    def between(self, lo: str, hi: str | None) -> Iterator[str]:
        """Keys in ``[lo, hi)`` in order, lazily: a page reads only what it returns."""
        return iter(self._keys.irange(lo, hi, inclusive=(True, False)))

    def count(self, lo: str, hi: str | None) -> int:
        """How many keys are in ``[lo, hi)``."""
        end = len(self._keys) if hi is None else self._keys.bisect_left(hi)
        return max(0, end - self._keys.bisect_left(lo))


@dataclass(frozen=True)
class Snapshot:
    """A resource as it was at a past resourceVersion, read without copying it: the live
    objects and their order, overlaid with the state at that version of each object
    written since (``None``: it did not exist then)."""

    live: Mapping[ObjKey, dict[str, Any]]
    order: KeyOrder
    changed: Mapping[ObjKey, dict[str, Any] | None]

    def keys(self, lo: str, hi: str | None) -> Iterator[str]:
        """Keys in ``[lo, hi)`` in order, those that existed at the snapshot's version
        and whose object is gone since included (``get`` returns None for those added
        since)."""
        if not self.changed:
            return self.order.between(lo, hi)
        gone = sorted(
            k
            for oid, old in self.changed.items()
            if old is not None
            and oid not in self.live
            and (k := etcd_key(oid)) >= lo
            and (hi is None or k < hi)
        )
        return heapq.merge(self.order.between(lo, hi), gone) if gone else self.order.between(lo, hi)

    def items(self, lo: str, hi: str | None) -> Iterator[tuple[str, dict[str, Any] | None]]:
        """``(key, get(key))`` for ``keys(lo, hi)``, in order: a page's scan, which
        reads every object of the range when a selector matches few of them."""
        if self.changed:
            for k in self.keys(lo, hi):
                yield k, self.get(k)
            return
        live = self.live
        for k in self.order.between(lo, hi):
            ns, sep, name = k.partition("/")
            yield k, live.get((ns, name) if sep else ("", k))

    def get(self, key: str) -> dict[str, Any] | None:
        """The object at the snapshot's version, None when it did not exist then."""
        oid = object_key(key)
        if oid in self.changed:
            return self.changed[oid]
        return self.live.get(oid)

    def count(self, lo: str, hi: str | None) -> int:
        """How many objects of ``[lo, hi)`` existed at the snapshot's version."""
        n = self.order.count(lo, hi)
        for oid, old in self.changed.items():
            k = etcd_key(oid)
            if k < lo or (hi is not None and k >= hi):
                continue
            if old is None and oid in self.live:
                n -= 1  # added since
            elif old is not None and oid not in self.live:
                n += 1  # deleted since
        return n
