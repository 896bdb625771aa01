"""Env var and list helpers shared by pods and deployments.

Go appends system env vars and mounts after the template's, so a template
entry with the same name is shadowed (the kubelet keeps the last one) and
the API server warns, or rejects a duplicate mount path. We give the same
effective result without duplicates: an injected entry replaces an
existing one with the same key, in place of appending a second.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["env_list", "inject_by_key", "merge_first_wins"]


def env_list(env: Mapping[str, str]) -> list[dict[str, Any]]:
    """Plain ``EnvVar`` dicts in mapping order; an empty value is omitted (Go's omitempty)."""
    return [{"name": k, "value": v} if v != "" else {"name": k} for k, v in env.items()]


def merge_first_wins(
    current: list[dict[str, Any]], new: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Sedna's ``MergeSecretEnvs(now, new, overwrite=false)``: the first of a name wins."""
    names = {e["name"] for e in current}
    for e in new:
        if e["name"] not in names:
            current.append(dict(e))
            names.add(e["name"])
    return current


def list_field(obj: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """``obj[key]`` as the list to merge into; a null or absent one becomes ``[]``.

    kube reads ``volumeMounts: null`` as no mounts, and so must the builder:
    ``setdefault`` would return the None (found by fuzzing).
    """
    value = obj.get(key)
    if value is None:
        value = obj[key] = []
    out: list[dict[str, Any]] = value
    return out


def dict_field(obj: dict[str, Any], key: str) -> dict[str, Any]:
    """``obj[key]`` as the mapping to write into; a null or absent one becomes ``{}``."""
    value = obj.get(key)
    if value is None:
        value = obj[key] = {}
    out: dict[str, Any] = value
    return out


def inject_by_key(
    target: list[dict[str, Any]], entries: Iterable[Mapping[str, Any]], key: str
) -> None:
    """Append ``entries`` to ``target``, dropping earlier items with the same ``key`` value.

    One pass, not one per entry: a worker's env is built twice per sync of every job.
    An entry replaces an earlier entry of the same key too (the last one is kept, at its
    place among the entries).
    """
    entries = list(entries)
    last = {_hashable(e.get(key)): i for i, e in enumerate(entries)}
    kept = [t for t in target if _hashable(t.get(key)) not in last]
    kept += [dict(e) for i, e in enumerate(entries) if last[_hashable(e.get(key))] == i]
    target[:] = kept


def _hashable(value: Any) -> Any:
    """``value`` as a dict key that compares as the value does (a malformed template may
    hold a list or an object where a name belongs)."""
    try:
        hash(value)
    except TypeError:
        return ("unhashable", repr(value))
    return value
