"""The three patch formats kube-apiserver accepts.

- JSON merge patch (RFC 7386), used by kubectl for custom resources.
- JSON patch (RFC 6902).
- Strategic merge patch: merge patch plus per-field list semantics (lists of named
  things merged by key) and ``$patch``/``$setElementOrder``/``$retainKeys``/
  ``$deleteFromPrimitiveList`` directives. kube derives merge keys from Go struct tags;
  here a table of the fields clients patch stands in for them.
"""

from __future__ import annotations

import copy
from typing import Any

from .errors import APIError, bad_request

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


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = merge_patch(result.get(k), v)
    return result


def _unescape(tok: str) -> str:
    return tok.replace("~1", "/").replace("~0", "~")


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f"invalid JSON pointer {path!r}")
    return [_unescape(t) for t in path[1:].split("/")]


def _walk(doc: Any, toks: list[str]) -> Any:
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


def _add(doc: Any, toks: list[str], value: Any) -> Any:
    if not toks:
        return value
    parent = _walk(doc, toks[:-1])
    last = toks[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, True), value)
    else:
        raise _patch_error(f"cannot add at {last!r}")
    return doc


def _remove(doc: Any, toks: list[str]) -> tuple[Any, Any]:
    if not toks:
        raise _patch_error("cannot remove the root")
    parent = _walk(doc, toks[:-1])
    last = toks[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _patch_error(f"unable to remove nonexistent key: {last}")
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, last, False))
    raise _patch_error(f"cannot remove {last!r}")


def json_patch(doc: Any, ops: Any) -> Any:
    """RFC 6902 on a deep copy of ``doc``; a failed ``test`` or bad path is a 422."""
    if not isinstance(ops, list):
        raise bad_request("json patch must be a list of operations")
    doc = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise bad_request(f"invalid json patch operation: {op!r}")
        kind = op["op"]
        toks = _pointer(op["path"])
        if kind == "add":
            doc = _add(doc, toks, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            doc, _ = _remove(doc, toks)
        elif kind == "replace":
            _walk(doc, toks)
            doc, _ = _remove(doc, toks) if toks else (doc, None)
            doc = _add(doc, toks, copy.deepcopy(op.get("value")))
        elif kind == "move":
            src = _pointer(op["from"])
            doc, val = _remove(doc, src)
            doc = _add(doc, toks, val)
        elif kind == "copy":
            val = copy.deepcopy(_walk(doc, _pointer(op["from"])))
            doc = _add(doc, toks, val)
        elif kind == "test":
            if _walk(doc, toks) != op.get("value"):
                raise _patch_error(f"test operation failed at {op['path']}")
        else:
            raise bad_request(f"unknown json patch operation {kind!r}")
    return doc


def _list_key(field: str, items: list[Any]) -> str | None:
    if field == "ports":
        sample = next((i for i in items if isinstance(i, dict)), None)
        if sample is not None:
            return "containerPort" if "containerPort" in sample else "port"
        return None
    return MERGE_KEYS.get(field)


def strategic_merge(target: Any, patch: Any) -> Any:
    """Strategic merge patch of ``patch`` onto ``target`` (returns a new value)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
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
                result[field] = [x for x in cur if x not in v]
            continue
        if v is None:
            result.pop(k, None)
            continue
        cur = result.get(k)
        if isinstance(v, list):
            result[k] = _merge_list(k, cur if isinstance(cur, list) else None, v)
        elif isinstance(v, dict):
            merged = strategic_merge(cur if isinstance(cur, dict) else {}, v)
            if merged is None:
                result.pop(k, None)
            else:
                result[k] = merged
        else:
            result[k] = v
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(field: str, cur: list[Any] | None, patch: list[Any]) -> list[Any]:
    if field in SET_LISTS:
        out = list(cur or [])
        for x in patch:
            if x not in out:
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
                m = strategic_merge({}, item)
                out.append(m)
            else:
                out.append(copy.deepcopy(item))
        return out
    if any(isinstance(i, dict) and i.get("$patch") == "replace" for i in patch):
        return [
            strategic_merge({}, i) for i in patch if not (isinstance(i, dict) and "$patch" in i)
        ]
    out = [copy.deepcopy(i) for i in cur]
    for item in patch:
        if not isinstance(item, dict):
            out.append(copy.deepcopy(item))
            continue
        kv = item.get(key)
        idx = next(
            (
                n
                for n, e in enumerate(out)
                if isinstance(e, dict) and kv is not None and e.get(key) == kv
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if idx is not None:
                out.pop(idx)
            continue
        if idx is None:
            out.append(strategic_merge({}, item))
        else:
            out[idx] = strategic_merge(out[idx], item)
    return out
