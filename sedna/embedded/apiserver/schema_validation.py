"""Custom resources checked against their CRD's structural schema, as kube-apiserver does.

What kube does for a structural schema (apiextensions.k8s.io/v1), and so this server:

- **Pruning**: a field the schema does not declare is dropped before storing, unless an
  enclosing schema says `x-kubernetes-preserve-unknown-fields: true` (or gives
  `additionalProperties`). With `?fieldValidation=Strict` (kubectl sends it since 1.25)
  an unknown field is a 400 `strict decoding error: unknown field "spec.foo"` instead.
- **Nulls**: a `null` for a field that is not `nullable` is dropped.
- **Validation**: `type` (with `x-kubernetes-int-or-string`), `required`, `enum`,
  `minimum`/`maximum`, `minLength`/`maxLength`, `minItems`/`maxItems` and `pattern`;
  every failure is a cause of one 422 `Invalid` in kube's words
  (`spec.dataset.trainProb: Invalid value: "string": spec.dataset.trainProb in body
  must be of type number: "string"`).

Better than kube: Sedna's CRDs (controller-gen without generateEmbeddedObjectMeta)
declare a pod template's `metadata` as a bare `type: object`, which kube prunes to
nothing, so template labels silently vanish on a real cluster, and which kubectl's
strict validation refuses outright (`unknown field "...template.metadata.labels"`),
Sedna's own samples included. Here a property `metadata` with a bare object schema is
kept as the ObjectMeta it is meant to be.

`format` and CEL rules are not checked (Sedna's CRDs have no CEL rules; kube checks only
a few formats). `apiVersion`, `kind` and `metadata` at the root are the server's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from contextvars import Context, ContextVar
from functools import lru_cache
from typing import Any, TypeVar

from .errors import APIError

Schema = Mapping[str, Any]
T = TypeVar("T")

STRICT = "Strict"
IGNORE = "Ignore"
# The unknown fields pruned while serving the current request (one asyncio task each),
# for the `Warning` headers kube sends with fieldValidation Warn (its default).
_PRUNED: ContextVar[tuple[str, ...]] = ContextVar("pruned_fields", default=())
_ROOT_KEPT = ("apiVersion", "kind", "metadata")
_MAX_CAUSES = 20  # kube caps an Invalid's causes too; the first ones name the problem


class _Walk:
    def __init__(self) -> None:
        self.causes: list[dict[str, str]] = []
        self.unknown: list[str] = []

    def fail(self, reason: str, field: str, detail: str) -> None:
        # kube's StatusCause: the error body alone in `message`, the path in `field`
        # (kubectl prints `field: message`; the aggregate message joins the two once)
        self.causes.append({"reason": reason, "message": detail, "field": field})


def _type_name(value: Any) -> str:
    """The JSON type of a value, in the words kube's messages use."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _show(value: Any) -> str:
    """A value as Go's %#v-ish quoting in kube messages: strings quoted, numbers bare."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(_type_name(value))


def _type_ok(value: Any, want: str) -> bool:
    actual = _type_name(value)
    return actual == want or (want == "number" and actual == "integer")


@lru_cache(maxsize=512)
def _regex(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None  # a Go-only construct: kube would have refused the CRD; never block here


def _check_scalar(walk: _Walk, schema: Schema, value: Any, path: str) -> None:
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and value not in enum:
        supported = ", ".join(_show(e) for e in enum)
        walk.fail(
            "FieldValueNotSupported",
            path,
            f"Unsupported value: {_show(value)}: supported values: {supported}",
        )
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        low, high = schema.get("minimum"), schema.get("maximum")
        if isinstance(low, (int, float)) and value < low:
            walk.fail(
                "FieldValueInvalid",
                path,
                f"Invalid value: {_show(value)}: {path} in body should be greater than or "
                f"equal to {low}",
            )
        if isinstance(high, (int, float)) and value > high:
            walk.fail(
                "FieldValueInvalid",
                path,
                f"Invalid value: {_show(value)}: {path} in body should be less than or "
                f"equal to {high}",
            )
    if isinstance(value, str):
        short, long = schema.get("minLength"), schema.get("maxLength")
        if isinstance(short, int) and len(value) < short:
            walk.fail(
                "FieldValueInvalid",
                path,
                f"Invalid value: {_show(value)}: {path} in body should be at least {short} "
                "chars long",
            )
        if isinstance(long, int) and len(value) > long:
            walk.fail("FieldValueTooLong", path, f"Too long: may not be more than {long} bytes")
        pattern = schema.get("pattern")
        rx = _regex(pattern) if isinstance(pattern, str) else None
        if rx is not None and not rx.search(value):
            walk.fail(
                "FieldValueInvalid",
                path,
                f"Invalid value: {_show(value)}: {path} in body should match '{pattern}'",
            )


def _visit(walk: _Walk, schema: Schema, value: Any, path: str) -> Any:
    """Check `value` against `schema`; return it pruned (nested values are pruned in place)."""
    if schema.get("x-kubernetes-int-or-string"):
        if _type_name(value) not in ("integer", "string"):
            walk.fail(
                "FieldValueTypeInvalid",
                path,
                f"Invalid value: {_show(_type_name(value))}: {path} in body must be of type "
                f"integer,string: {_show(value)}",
            )
            return value
        _check_scalar(walk, schema, value, path)
        return value
    want = schema.get("type")
    if isinstance(want, str) and not _type_ok(value, want):
        walk.fail(
            "FieldValueTypeInvalid",
            path,
            f"Invalid value: {_show(_type_name(value))}: {path} in body must be of type "
            f"{want}: {_show(value)}",
        )
        return value
    if isinstance(value, dict):
        _visit_object(walk, schema, value, path)
    elif isinstance(value, list):
        _visit_array(walk, schema, value, path)
    else:
        _check_scalar(walk, schema, value, path)
    return value


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _visit_object(walk: _Walk, schema: Schema, obj: dict[str, Any], path: str) -> None:
    props: Mapping[str, Any] = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    for key in list(obj):
        value = obj[key]
        sub = props.get(key)
        if sub is None and isinstance(extra, Mapping):
            sub = extra
        if not path and key in _ROOT_KEPT:
            continue  # the server's own: checked and defaulted elsewhere
        if key == "metadata" and _bare_object(sub):
            continue  # an embedded ObjectMeta (see the module docstring)
        if sub is None:
            if not preserve and extra is not True:
                walk.unknown.append(_child(path, key))
                del obj[key]
            continue
        if value is None and not sub.get("nullable"):
            del obj[key]  # kube prunes nulls of non-nullable fields before validating
            continue
        _visit(walk, sub, value, _child(path, key))
    for key in schema.get("required") or ():
        if key not in obj:
            walk.fail("FieldValueRequired", _child(path, key), "Required value")
    _check_size(walk, schema, len(obj), path, "properties")


def _bare_object(schema: Schema | None) -> bool:
    return (
        isinstance(schema, Mapping)
        and schema.get("type") == "object"
        and not (schema.get("properties") or schema.get("additionalProperties"))
    )


def _visit_array(walk: _Walk, schema: Schema, items: list[Any], path: str) -> None:
    sub = schema.get("items")
    if isinstance(sub, Mapping):
        for i, item in enumerate(items):
            _visit(walk, sub, item, f"{path}[{i}]")
    _check_size(walk, schema, len(items), path, "items")


def _check_size(walk: _Walk, schema: Schema, n: int, path: str, what: str) -> None:
    low, high = schema.get(f"min{what.title()}"), schema.get(f"max{what.title()}")
    if isinstance(high, int) and n > high:
        walk.fail("FieldValueTooMany", path, f"Too many: {n}: must have at most {high} {what}")
    if isinstance(low, int) and n < low:
        walk.fail(
            "FieldValueInvalid",
            path,
            f"Invalid value: {n}: {path} in body should have at least {low} {what}",
        )


def validate_custom_resource(
    schema: Schema | None,
    obj: dict[str, Any],
    *,
    kind: str,
    group: str,
    version: str,
    field_validation: str | None = None,
) -> list[str]:
    """Prune `obj` in place and validate it; return the unknown fields that were pruned.

    Raises the 400 (strict unknown fields) or 422 (invalid values) that kube would.
    A CRD without a schema, or whose root preserves unknown fields, accepts anything.
    """
    if not isinstance(schema, Mapping):
        return []
    walk = _Walk()
    _visit(walk, schema, obj, "")
    if walk.unknown and field_validation == STRICT:
        listed = ", ".join(f'unknown field "{f}"' for f in walk.unknown)
        raise APIError(
            400,
            "BadRequest",
            f"{kind} in version {json.dumps(version)} cannot be handled as a {kind}: "
            f"strict decoding error: {listed}",
        )
    if walk.unknown and field_validation != IGNORE:
        _PRUNED.set(_PRUNED.get() + tuple(walk.unknown))
    if walk.causes:
        name = str((obj.get("metadata") or {}).get("name") or "")
        causes = walk.causes[:_MAX_CAUSES]
        details = [f"{c['field']}: {c['message']}" if c["field"] else c["message"] for c in causes]
        shown = details[0] if len(details) == 1 else "[" + ", ".join(details) + "]"
        raise APIError(
            422,
            "Invalid",
            f'{kind}.{group} "{name}" is invalid: {shown}',
            name=name,
            group=group,
            kind=kind,
            causes=causes,
        )
    return walk.unknown


def pruned_warnings() -> list[str]:
    """`Warning` header values for the fields pruned in this request (then forgotten)."""
    fields = _PRUNED.get()
    _PRUNED.set(())
    return [f'299 - "unknown field \\"{f}\\""' for f in fields]


def collect_pruned(fn: Callable[[], T]) -> tuple[T, tuple[str, ...]]:
    """``fn()`` and the unknown fields its schema checks pruned.

    For a write worked out on another thread (``writes``): that thread does not run in
    the request's context, where the fields are kept for the answer's `Warning`
    headers; the caller hands them over with `add_pruned`.
    """
    ctx = Context()
    result = ctx.run(fn)
    return result, ctx.get(_PRUNED, ())


def add_pruned(fields: tuple[str, ...]) -> None:
    """Record pruned fields (from `collect_pruned`) for this request's answer."""
    if fields:
        _PRUNED.set(_PRUNED.get() + fields)
