"""Watch events that only echo a controller's own write.

A sync that creates a job's workers and writes its status is followed by a watch event
for each of those writes; each wakes the job's controller for a second sync that finds
nothing to do (half of a new job's syncs, and most of their CPU). A controller records
what its writes returned (the object's UID and the resourceVersion the server gave it)
and lets an event through only when it carries a different version: the event of
exactly that version shows the state the writing sync already acted on.

This only drops wake-ups, never cache updates (the informer stores every event), and
only for the version written: any later change, by anyone, has a new resourceVersion
and wakes the controller as before. An event that races ahead of the write's answer is
not recognized and simply wakes the controller (the safe side). The periodic resync
is not an echo either (its versions are unchanged, and never recorded).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["WriteEchoes"]

DEFAULT_MAX_ENTRIES = 8192


class WriteEchoes:
    """The versions this controller's writes produced, by object UID; thread-safe.

    Bounded: past `max_entries` the oldest are forgotten, which only costs the wake-up
    the entry would have saved.
    """

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._max = max_entries
        self._versions: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def record(self, obj: Mapping[str, Any] | None) -> None:
        """Remember what a write of ours returned (a create's, update's or status write's
        answer); an object without a UID or resourceVersion is ignored."""
        uid, rv = _identity(obj)
        if not uid or not rv:
            return
        with self._lock:
            self._versions[uid] = rv
            self._versions.move_to_end(uid)
            while len(self._versions) > self._max:
                self._versions.popitem(last=False)

    def record_all(self, objs: Iterable[Mapping[str, Any] | None]) -> None:
        for obj in objs:
            self.record(obj)

    def record_status_write(self, written: Mapping[str, Any], read: Mapping[str, Any]) -> None:
        """Remember a status write's answer when it differs from the object the sync read
        (`read`, e.g. its cached copy) only in status: a write retried after a conflict may
        carry others' changes the sync never saw, and their event must wake it."""
        if _meta(written).get("resourceVersion") == _meta(read).get("resourceVersion"):
            return  # nothing was written
        if written.get("spec") != read.get("spec"):
            return
        mw, mr = _meta(written), _meta(read)
        if any(mw.get(k) != mr.get(k) for k in set(mw).union(mr).difference(_VOLATILE)):
            return
        self.record(written)

    def is_echo(self, obj: Mapping[str, Any] | None) -> bool:
        """Whether `obj` is exactly the version one of our writes made (then forgotten:
        each write is echoed once)."""
        uid, rv = _identity(obj)
        if not uid or not rv:
            return False
        with self._lock:
            if self._versions.get(uid) != rv:
                return False
            del self._versions[uid]
            return True

    def forget(self, obj: Mapping[str, Any] | None) -> None:
        """Drop the entry of `obj`'s UID (the object is gone)."""
        uid, _ = _identity(obj)
        if uid:
            with self._lock:
                self._versions.pop(uid, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._versions)


_VOLATILE = ("resourceVersion", "managedFields")


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _identity(obj: Mapping[str, Any] | None) -> tuple[str, str]:
    if not isinstance(obj, Mapping):
        return "", ""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return "", ""
    uid, rv = meta.get("uid"), meta.get("resourceVersion")
    return (uid if isinstance(uid, str) else ""), (rv if isinstance(rv, str) else "")
