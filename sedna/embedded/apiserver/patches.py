"""The three patch formats kube-apiserver accepts.

- JSON merge patch (RFC 7386), used by kubectl for custom resources.
- JSON patch (RFC 6902).
- Strategic merge patch: merge patch plus per-field list semantics (lists of named
  things merged by key) and ``$patch``/``$setElementOrder``/``$retainKeys``/
  ``$deleteFromPrimitiveList`` directives. kube derives merge keys from Go struct tags;
  here a table of the fields clients patch stands in for them.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import orjson

from .errors import APIError, bad_request
from .patch_budget import MAX_JSON_PATCH_OPS, PatchBudget, clone, too_many_ops

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

# field name -> merge key (kube's patchMergeKey tags for the lists clients patch)
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "conditions": "type",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "ownerReferences": "uid",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
    "readinessGates": "conditionType",
}
# primitive lists merged as sets (patchStrategy:"merge" on []string)
SET_LISTS = {"finalizers"}


def merge_patch(target: Any, patch: Any, budget: PatchBudget | None = None) -> Any:
    """RFC 7386: objects merge recursively, null deletes, anything else replaces.

    Values are taken from ``patch`` itself (the caller owns it): the result nests no
    deeper and weighs no more than target and patch together, and costs one step per
    key of the patch.
    """
    budget = budget or PatchBudget()
    if not isinstance(patch, dict):
        return patch
    budget.charge(1 + len(patch))
    result = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = merge_patch(result.get(k), v, budget)
    return result


def _unescape(tok: str) -> str:
    return tok.replace("~1", "/").replace("~0", "~")


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f"invalid JSON pointer {path!r}")
    return [_unescape(t) for t in path[1:].split("/")]


def _walk(doc: Any, toks: list[str], budget: PatchBudget) -> Any:
    budget.charge(1 + len(toks))
    cur = doc
    for t in toks:
        if isinstance(cur, dict):
            if t not in cur:
                raise _patch_error(f"path segment {t!r} not found")
            cur = cur[t]
        elif isinstance(cur, list):
            cur = cur[_index(cur, t, False)]
        else:
            raise _patch_error(f"cannot descend into {t!r}")
    return cur


def _index(lst: list[Any], tok: str, adding: bool) -> int:
    if adding and tok == "-":
        return len(lst)
    try:
        i = int(tok)
    except ValueError:
        raise _patch_error(f"invalid array index {tok!r}") from None
    if i < 0 or i > len(lst) or (not adding and i == len(lst)):
        raise _patch_error(f"array index {i} out of bounds")
    return i


def _patch_error(msg: str) -> APIError:
    return APIError(
        422, "Invalid", f"the server rejected our request due to an error in our request: {msg}"
    )


class _Doc:
    """The document being patched and an upper bound of its depth (None: not known yet).

    Values moved or copied within the document are no deeper than the document below
    where they come from, so only values from the body need a walk to be placed.
    """

    def __init__(self, budget: PatchBudget) -> None:
        self.budget = budget
        self.depth: int | None = None

    def bound_below(self, doc: Any, toks: list[str]) -> int:
        if self.depth is None:
            self.depth = self.budget.measure(doc, 1 << 30)
        return max(1, self.depth - len(toks))

    def placed(self, reached: int) -> None:
        if self.depth is not None:
            self.depth = max(self.depth, reached)


def _add(
    doc: Any, toks: list[str], value: Any, budget: PatchBudget, state: _Doc, bound: int | None
) -> Any:
    state.placed(budget.place(len(toks), value, bound))
    if not toks:
        return value
    parent = _walk(doc, toks[:-1], budget)
    last = toks[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        budget.charge(len(parent))  # the elements an insert shifts
        parent.insert(_index(parent, last, True), value)
    else:
        raise _patch_error(f"cannot add at {last!r}")
    return doc


def _remove(doc: Any, toks: list[str], budget: PatchBudget) -> tuple[Any, Any]:
    if not toks:
        raise _patch_error("cannot remove the root")
    parent = _walk(doc, toks[:-1], budget)
    last = toks[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _patch_error(f"unable to remove nonexistent key: {last}")
        return doc, parent.pop(last)
    if isinstance(parent, list):
        budget.charge(len(parent))
        return doc, parent.pop(_index(parent, last, False))
    raise _patch_error(f"cannot remove {last!r}")


def json_patch(doc: Any, ops: Any, budget: PatchBudget | None = None) -> Any:
    """RFC 6902 on a copy of ``doc``; a failed ``test`` or bad path is a 422.

    Bounded as it runs (`PatchBudget`): at most 10,000 operations (413, as kube), the
    bytes ``copy`` adds, the depth of every value where it lands and the work in all
    (422), so an operation that would pass a bound is refused before it is done. The
    values of ``ops`` are used as they are: the caller owns the decoded body.
    """
    budget = budget or PatchBudget()
    if not isinstance(ops, list):
        raise bad_request("json patch must be a list of operations")
    if len(ops) > MAX_JSON_PATCH_OPS:
        raise too_many_ops(len(ops))
    doc = clone(doc)
    state = _Doc(budget)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or not isinstance(op.get("path"), str):
            raise bad_request(f"invalid json patch operation: {_short(op)}")
        kind = op["op"]
        toks = _pointer(op["path"])
        if kind == "add":
            doc = _add(doc, toks, op.get("value"), budget, state, None)
        elif kind == "remove":
            doc, _ = _remove(doc, toks, budget)
        elif kind == "replace":
            _walk(doc, toks, budget)
            doc, _ = _remove(doc, toks, budget) if toks else (doc, None)
            doc = _add(doc, toks, op.get("value"), budget, state, None)
        elif kind == "move":
            src = _pointer(_from(op))
            if toks[: len(src)] == src and len(toks) > len(src):
                raise _patch_error("cannot move a value into itself")
            bound = state.bound_below(doc, src)
            doc, val = _remove(doc, src, budget)
            doc = _add(doc, toks, val, budget, state, bound)
        elif kind == "copy":
            src = _pointer(_from(op))
            val = budget.copy(_walk(doc, src, budget))
            doc = _add(doc, toks, val, budget, state, state.bound_below(doc, src))
        elif kind == "test":
            value = op.get("value")
            budget.measure(value, budget.depth)  # a comparison costs the value's size at most
            if _walk(doc, toks, budget) != value:
                raise _patch_error(f"test operation failed at {_short(op['path'])}")
        else:
            raise bad_request(f"unknown json patch operation {_short(kind)}")
    return doc


def _from(op: dict[str, Any]) -> str:
    src = op.get("from")
    if not isinstance(src, str):
        raise bad_request(f"invalid json patch operation: {_short(op)}")
    return src


def _short(value: Any, limit: int = 200) -> str:
    """A value for an error message, cut short: the message is sent back and maybe logged."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _list_key(field: str, items: list[Any]) -> str | None:
    if field == "ports":
        sample = next((i for i in items if isinstance(i, dict)), None)
        if sample is not None:
            return "containerPort" if "containerPort" in sample else "port"
        return None
    return MERGE_KEYS.get(field)


def strategic_merge(target: Any, patch: Any, budget: PatchBudget | None = None) -> Any:
    """Strategic merge patch of ``patch`` onto ``target`` (returns a new value).

    Values are taken from ``patch`` and ``target`` without copies (the caller owns
    both), and list items are matched through an index, not by scanning: a patch of
    100,000 list items costs 100,000 steps, not their square.
    """
    budget = budget or PatchBudget()
    if not isinstance(patch, dict):
        return patch
    budget.charge(1 + len(patch))
    if patch.get("$patch") == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for k, v in patch.items():
        if k in ("$patch", "$retainKeys") or k.startswith("$setElementOrder/"):
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            field = k.split("/", 1)[1]
            cur = result.get(field)
            if isinstance(cur, list) and isinstance(v, list):
                budget.charge(len(cur) + len(v))
                drop = {_ident(x) for x in v}
                result[field] = [x for x in cur if _ident(x) not in drop]
            continue
        if v is None:
            result.pop(k, None)
            continue
        cur = result.get(k)
        if isinstance(v, list):
            result[k] = _merge_list(k, cur if isinstance(cur, list) else None, v, budget)
        elif isinstance(v, dict):
            merged = strategic_merge(cur if isinstance(cur, dict) else {}, v, budget)
            if merged is None:
                result.pop(k, None)
            else:
                result[k] = merged
        else:
            result[k] = v
    if isinstance(retain, list):
        budget.charge(len(retain) + len(result))
        keep = {r for r in retain if isinstance(r, str)}
        result = {k: v for k, v in result.items() if k in keep}
    return result


def _ident(value: Any) -> bytes:
    """A hashable identity for a JSON value: list items are matched through a dict."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except (orjson.JSONEncodeError, TypeError):
        return repr(value).encode()


_GONE = object()


def _merge_list(
    field: str, cur: list[Any] | None, patch: list[Any], budget: PatchBudget
) -> list[Any]:
    budget.charge(len(patch) + len(cur or ()))
    if field in SET_LISTS:
        out = list(cur or [])
        seen = {_ident(x) for x in out}
        for x in patch:
            new = _ident(x)
            if new not in seen:
                seen.add(new)
                out.append(x)
        return out
    key = _list_key(field, patch + (cur or []))
    if key is None or cur is None:
        # replace semantics (also strips directives out of the new items)
        out = []
        for item in patch:
            if isinstance(item, dict):
                if item.get("$patch") == "delete":
                    continue
                out.append(strategic_merge({}, item, budget))
            else:
                out.append(item)
        return out
    if any(isinstance(i, dict) and i.get("$patch") == "replace" for i in patch):
        return [
            strategic_merge({}, i, budget)
            for i in patch
            if not (isinstance(i, dict) and "$patch" in i)
        ]
    slots: list[Any] = list(cur)
    # merge key -> the positions of the items holding it, first first
    where: dict[bytes, deque[int]] = {}
    for n, e in enumerate(slots):
        if isinstance(e, dict) and e.get(key) is not None:
            where.setdefault(_ident(e[key]), deque()).append(n)
    for item in patch:
        if not isinstance(item, dict):
            slots.append(item)
            continue
        kv = item.get(key)
        ident: bytes | None = _ident(kv) if kv is not None else None
        found = where.get(ident) if ident is not None else None
        idx = found[0] if found else None
        if item.get("$patch") == "delete":
            if found:
                slots[found.popleft()] = _GONE
            continue
        if idx is None:
            slots.append(strategic_merge({}, item, budget))
            if ident is not None:
                where.setdefault(ident, deque()).append(len(slots) - 1)
        else:
            slots[idx] = strategic_merge(slots[idx], item, budget)
    return [s for s in slots if s is not _GONE]


def apply_patch(ctype: str, doc: Any, patch: Any) -> Any:
    """``patch`` (of media type ``ctype``) applied to a private copy of ``doc``.

    Safe to run off the server's loop (stored objects are never mutated) and to run
    again on a newer object: ``patch`` is copied too. Each call has a fresh `PatchBudget`.
    """
    budget = PatchBudget()
    patch = clone(patch)
    if ctype == JSON_PATCH:
        return json_patch(doc, patch, budget)
    if not isinstance(patch, dict):
        raise bad_request("patch body must be a JSON object")
    base = clone(doc)
    if ctype == MERGE_PATCH:
        return merge_patch(base, patch, budget)
    return strategic_merge(base, patch, budget)
