"""Catching callers that mutate shared cache objects (client-go's
``KUBE_CACHE_MUTATION_DETECTOR``).

Every consumer of an informer sees the same dict; one controller changing it in
place corrupts what every other controller reads, and the bug shows up far from
its cause. With the detector on (``SEDNA_CACHE_MUTATION_DETECTOR=1`` or the
factory flag) each object entering the cache is deep-copied, and a periodic and a
final check compare object and copy and name the first changed field. It doubles
memory and costs a deep copy per event: a test and debugging aid only.
"""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Mapping
from typing import Any

from loguru import logger

__all__ = ["ENV_VAR", "CacheMutationError", "MutationDetector", "detector_enabled_by_env"]

ENV_VAR = "SEDNA_CACHE_MUTATION_DETECTOR"


def detector_enabled_by_env() -> bool:
    """Whether the environment asks for the detector (``1``/``true``/``yes``)."""
    return os.environ.get(ENV_VAR, "").strip().lower() in ("1", "true", "yes", "on")


class CacheMutationError(RuntimeError):
    """A cached object was changed in place by someone holding a reference to it."""


def _first_difference(a: Any, b: Any, path: str = "") -> str | None:
    if type(a) is not type(b):
        return path or "<object>"
    if isinstance(a, dict):
        for k in a.keys() | b.keys():
            sub = f"{path}.{k}" if path else str(k)
            if k not in a or k not in b:
                return sub
            found = _first_difference(a[k], b[k], sub)
            if found is not None:
                return found
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}[len {len(b)} -> {len(a)}]"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = _first_difference(x, y, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    return None if a == b else (path or "<object>")


class MutationDetector:
    """Keeps (object, pristine copy) pairs and reports objects that drifted."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._tracked: list[tuple[str, Mapping[str, Any], Any]] = []
        self.failures: list[str] = []

    def track(self, key: str, obj: Mapping[str, Any]) -> None:
        """Remember ``obj`` as it is now (called as it enters the cache)."""
        pristine = copy.deepcopy(obj)
        with self._lock:
            self._tracked.append((key, obj, pristine))

    def check(self, is_current: Any = None) -> list[str]:
        """Compare everything tracked; return (and log) new failures.

        ``is_current(key, obj)`` says whether ``obj`` is still the cached object;
        objects that left the cache are dropped after one check, since handlers
        only hold them briefly (as ``old`` in an update, or on delete).
        """
        with self._lock:
            tracked = self._tracked
            self._tracked = []
        found: list[str] = []
        keep: list[tuple[str, Mapping[str, Any], Any]] = []
        for key, obj, pristine in tracked:
            where = _first_difference(obj, pristine)
            if where is not None:
                msg = (
                    f"cache mutation detected in informer {self.name}: object {key} was "
                    f"changed at {where}; callers must copy.deepcopy cached objects "
                    f"before changing them"
                )
                found.append(msg)
                logger.error(msg)
                # Re-baseline so the same mutation is reported once.
                pristine = copy.deepcopy(obj)
            if is_current is None or is_current(key, obj):
                keep.append((key, obj, pristine))
        with self._lock:
            self._tracked = keep + self._tracked
            self.failures.extend(found)
        return found

    def raise_if_failed(self) -> None:
        """Raise ``CacheMutationError`` listing every failure seen so far."""
        with self._lock:
            failures = list(self.failures)
        if failures:
            raise CacheMutationError("; ".join(failures))
