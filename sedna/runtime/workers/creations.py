"""No duplicate worker after a lost create response.

A create whose answer never arrived (a timeout, a 5xx, a reset connection) may still
have committed: kube-apiserver answers 504 when etcd is slow even though the write
went through. A controller that then retries from its informer cache alone creates a
second worker whenever the watch has not yet delivered the first (client-go's
controllers guard against this with expectations; Sedna's Go GM does not, and runs a
stage twice). `PodCreations` remembers such creates per (key, intent) and, before
the retry, reads the API itself (not the cache) for a pod the controller owns with
the worker's labels; one it may adopt is returned instead of a new create. A process
has no memory of its predecessor's creates: for an intent older than the process the
caller asks for the same look-up (`verify`).

Generic on purpose: the owner UID and the worker labels (Sedna's
`<kind>.sedna.io/name|uid|worker-type`) are all it needs, so every feature (staged
jobs, joint inference, federated learning, ...) uses the same helper. The memory is
bounded; losing an entry (eviction) only costs the look-up.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sedna.runtime.kube import ApiError, ResourceClient
from sedna.runtime.workers.labels import label_selector_string

__all__ = ["CreatedPod", "PodCreations", "answer_lost", "read_owned_pods"]

Pod = dict[str, Any]


@dataclass(frozen=True)
class CreatedPod:
    """The worker for an intent: `adopted` when it was found rather than created now."""

    pod: Pod
    adopted: bool


def answer_lost(exc: ApiError) -> bool:
    """Whether a failed create may have committed: no answer, or a server-side error.

    4xx answers (invalid, forbidden, already exists, too many requests) come before the
    write, so the pod cannot exist.
    """
    return exc.status == 0 or exc.status >= 500


def _controlled_by(pod: Mapping[str, Any], owner_uid: str) -> bool:
    refs = (pod.get("metadata") or {}).get("ownerReferences") or []
    return any(
        isinstance(r, Mapping) and r.get("controller") and r.get("uid") == owner_uid for r in refs
    )


def read_owned_pods(
    pods: ResourceClient, namespace: str, owner_uid: str, labels: Mapping[str, str]
) -> list[Pod]:
    """The live pods (not being deleted) with `labels` that `owner_uid` controls, read
    from the API server, oldest first."""
    listed = pods.list(namespace, label_selector=label_selector_string(labels))
    items = [
        p
        for p in listed.get("items") or []
        if isinstance(p, dict)
        and _controlled_by(p, owner_uid)
        and not (p.get("metadata") or {}).get("deletionTimestamp")
    ]
    return sorted(
        items,
        key=lambda p: (
            str(p["metadata"].get("creationTimestamp", "")),
            str(p["metadata"].get("name", "")),
        ),
    )


class PodCreations:
    """Creates a worker at most once per (key, intent), even when an answer is lost.

    `key` names the owner (its queue key), `intent` what the pod is for (a stage's
    condition, "first sync"); a new intent for the same key replaces the old one.
    Thread-safe; at most `max_entries` keys are remembered (oldest dropped first).
    """

    def __init__(
        self, pods: ResourceClient, *, max_entries: int = 4096, started: datetime | None = None
    ) -> None:
        """`started`: when this process began (the caller's clock; default now), for
        `predates`."""
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._pods = pods
        self._max = max_entries
        self._started = started if started is not None else datetime.now(UTC)
        self._lock = threading.Lock()
        self._in_doubt: OrderedDict[str, str] = OrderedDict()

    def predates(self, stamp: object) -> bool:
        """Whether an intent made at `stamp` (an RFC 3339 time: a condition's, an owner's
        creation) may be older than this process, so that the GM before a restart may
        have created its pod already: pass the answer as `create(verify=...)`. A stamp
        that is absent or unreadable counts as older (the look-up is the safe side)."""
        if not isinstance(stamp, str) or not stamp:
            return True
        try:
            at = datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(UTC)
        except ValueError:
            return True
        return at <= self._started

    def in_doubt(self, key: str, intent: str) -> bool:
        """Whether a create for this intent may have committed without an answer."""
        with self._lock:
            return self._in_doubt.get(key) == intent

    def forget(self, key: str) -> None:
        """Drop what is remembered for `key` (its owner is gone)."""
        with self._lock:
            self._in_doubt.pop(key, None)

    def create(
        self,
        key: str,
        intent: str,
        *,
        namespace: str,
        owner_uid: str,
        labels: Mapping[str, str],
        create: Callable[[], Pod],
        adoptable: Callable[[Mapping[str, Any]], bool] = lambda pod: True,
        verify: bool = False,
    ) -> CreatedPod:
        """The pod `create()` makes, unless an earlier create for this intent lost its
        answer (or, with `verify`, may have been made by another process) and the API
        now shows an `adoptable` pod: then the newest such pod.

        `verify` is for intents older than this process: the GM before a restart may
        have created the pod, and its create may have committed after this process's
        informers listed (a slow write answered 504 commits later). This process has no
        memory of it, so only the API can tell.

        Errors of `create` propagate; one whose answer was lost is remembered first.
        Errors of the look-up propagate too (the caller retries later, still in doubt).
        """
        if verify or self.in_doubt(key, intent):
            found = [p for p in read_owned_pods(self._pods, namespace, owner_uid, labels)]
            found = [p for p in found if adoptable(p)]
            if found:
                self.forget(key)
                return CreatedPod(found[-1], adopted=True)
        try:
            pod = create()
        except ApiError as exc:
            if answer_lost(exc):
                self._remember(key, intent)
            raise
        self.forget(key)
        return CreatedPod(pod, adopted=False)

    def _remember(self, key: str, intent: str) -> None:
        with self._lock:
            self._in_doubt[key] = intent
            self._in_doubt.move_to_end(key)
            while len(self._in_doubt) > self._max:
                self._in_doubt.popitem(last=False)
