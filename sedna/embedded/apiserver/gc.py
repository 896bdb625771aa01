"""Owner-reference garbage collection, simplified but with kube's outcomes.

- Background: once an owner is gone, each dependent that has no other live owner is
  deleted; a dependent with another live owner only loses the dangling reference.
- Foreground: the owner carries the ``foregroundDeletion`` finalizer while its
  dependents are deleted; it goes once no dependent with ``blockOwnerDeletion`` is left.
- Orphan: dependents lose their reference to the owner and stay.

Runs synchronously inside the write that triggered it, so a client that sees the
owner gone sees the cascade already done (kube's is eventual; tests poll anyway).
"""

from __future__ import annotations

import contextlib
from typing import Any

from .errors import APIError
from .operations import FOREGROUND, Operations, with_own_metadata
from .store import ObjId


class GarbageCollector:
    """Cascades deletions along ownerReferences (indexed by the store)."""

    def __init__(self, ops: Operations) -> None:
        self.ops = ops
        self.store = ops.store
        ops.gc = self

    def has_dependents(self, uid: str) -> bool:
        """Whether anything references ``uid`` as an owner."""
        return bool(uid) and bool(self.store.dependents.get(uid))

    def _deps(self, uid: str) -> list[ObjId]:
        return sorted(self.store.dependents.get(uid, ()))

    def _drop_refs(self, oid: ObjId, uids: set[str]) -> None:
        obj = self.store.get(*oid)
        rt = self.ops.registry.by_key(oid[0])
        if obj is None or rt is None:
            return
        new = with_own_metadata(obj)
        refs = [r for r in new["metadata"].get("ownerReferences") or () if r.get("uid") not in uids]
        if refs:
            new["metadata"]["ownerReferences"] = refs
        else:
            new["metadata"].pop("ownerReferences", None)
        self.ops.commit_update(rt, obj, new, None, internal=True)

    def orphan_dependents(self, uid: str) -> None:
        """Orphan policy: cut every dependent loose from the owner."""
        for oid in self._deps(uid):
            self._drop_refs(oid, {uid})

    def on_removed(self, owner: dict[str, Any]) -> None:
        """Called after an object is really gone: cascade and unblock foreground owners."""
        meta = owner["metadata"]
        uid = meta.get("uid", "")
        for oid in self._deps(uid):
            self._collect(oid, uid)
        for ref in meta.get("ownerReferences") or ():
            self._check_foreground(ref.get("uid", ""))

    def _collect(self, oid: ObjId, gone_uid: str) -> None:
        obj = self.store.get(*oid)
        rt = self.ops.registry.by_key(oid[0])
        if obj is None or rt is None:
            return
        refs = obj["metadata"].get("ownerReferences") or ()
        dangling = {
            r.get("uid", "") for r in refs if self.store.lookup_uid(r.get("uid", "")) is None
        }
        dangling.add(gone_uid)
        alive = [r for r in refs if r.get("uid") not in dangling]
        if alive:
            self._drop_refs(oid, dangling)
            return
        if obj["metadata"].get("deletionTimestamp"):
            return
        try:
            self.ops.delete(rt, oid[1], oid[2], {"propagationPolicy": "Background"})
        except APIError as err:
            if err.code == 500:  # the store refused the write: the removal retries the cascade
                raise

    def delete_dependents_foreground(self, owner: dict[str, Any]) -> None:
        """Foreground policy: delete dependents, then release the owner if none block."""
        uid = owner["metadata"].get("uid", "")
        for oid in self._deps(uid):
            obj = self.store.get(*oid)
            rt = self.ops.registry.by_key(oid[0])
            if obj is None or rt is None or obj["metadata"].get("deletionTimestamp"):
                continue
            with contextlib.suppress(APIError):
                self.ops.delete(rt, oid[1], oid[2], {"propagationPolicy": "Foreground"})
        self._check_foreground(uid)

    def _check_foreground(self, uid: str) -> None:
        found = self.store.lookup_uid(uid) if uid else None
        if found is None:
            return
        oid, owner = found
        meta = owner["metadata"]
        if not meta.get("deletionTimestamp") or FOREGROUND not in (meta.get("finalizers") or ()):
            return
        for dep in self._deps(uid):
            d = self.store.get(*dep)
            if d is None:
                continue
            for r in d["metadata"].get("ownerReferences") or ():
                if r.get("uid") == uid and r.get("blockOwnerDeletion"):
                    return
        rt = self.ops.registry.by_key(oid[0])
        if rt is None:
            return
        new = with_own_metadata(owner)
        new["metadata"]["finalizers"] = [f for f in meta["finalizers"] if f != FOREGROUND]
        self.ops.commit_update(rt, owner, new, None, internal=True)
