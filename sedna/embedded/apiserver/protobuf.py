"""Decoding of Kubernetes protobuf request bodies for the kinds kubectl creates imperatively.

kubectl (>= 1.2x) sends built-in kinds as ``application/vnd.kubernetes.protobuf`` for
``kubectl create namespace|secret|configmap|serviceaccount`` and does not fall back to
JSON on a 415, so those commands fail unless the server reads protobuf. The server
otherwise speaks JSON only, so this module turns such a body into the same dict a JSON
body would give, and everything downstream stays unaware of the wire format.

Only a hand-written wire-format reader and per-message field tables live here (field
numbers from ``k8s.io/api/core/v1`` and ``k8s.io/apimachinery`` ``generated.proto``);
a protobuf library would bring generated code for hundreds of kinds the server never
decodes. Kinds outside :data:`KINDS` keep getting 415 so clients know to send JSON.
Fields missing from a table (read-only timestamps, managedFields, future fields) are
skipped, as any protobuf reader skips unknown fields; the server sets or ignores those
on create anyway.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .errors import APIError, bad_request

MAGIC = b"k8s\x00"
"""Prefix of every Kubernetes protobuf body, before the ``runtime.Unknown`` envelope."""

Scalar = Literal["string", "bytes", "bool", "int64"]
MapValue = Literal["string", "bytes"]


@dataclass(frozen=True)
class Field:
    """How one protobuf field maps to its JSON counterpart.

    Exactly one of ``scalar``, ``map_value`` and ``message`` is set; ``repeated``
    collects every occurrence into a list (strings and messages are never packed).
    """

    name: str
    scalar: Scalar | None = None
    map_value: MapValue | None = None
    message: Mapping[int, Field] | None = None
    repeated: bool = False


def _s(name: str) -> Field:
    return Field(name, scalar="string")


OBJECT_META: Mapping[int, Field] = {
    # 8 creationTimestamp, 9 deletionTimestamp, 17 managedFields: server-owned, skipped.
    1: _s("name"),
    2: _s("generateName"),
    3: _s("namespace"),
    5: _s("uid"),
    6: _s("resourceVersion"),
    7: Field("generation", scalar="int64"),
    11: Field("labels", map_value="string"),
    12: Field("annotations", map_value="string"),
    13: Field(
        "ownerReferences",
        repeated=True,
        message={
            1: _s("kind"),
            3: _s("name"),
            4: _s("uid"),
            5: _s("apiVersion"),
            6: Field("controller", scalar="bool"),
            7: Field("blockOwnerDeletion", scalar="bool"),
        },
    ),
    14: Field("finalizers", scalar="string", repeated=True),
}

_OBJECT_REFERENCE: Mapping[int, Field] = {
    1: _s("kind"),
    2: _s("namespace"),
    3: _s("name"),
    4: _s("uid"),
    5: _s("apiVersion"),
    6: _s("resourceVersion"),
    7: _s("fieldPath"),
}

KINDS: Mapping[tuple[str, str], Mapping[int, Field]] = {
    ("v1", "Namespace"): {
        1: Field("metadata", message=OBJECT_META),
        2: Field("spec", message={1: Field("finalizers", scalar="string", repeated=True)}),
        3: Field("status", message={1: _s("phase")}),
    },
    ("v1", "Secret"): {
        1: Field("metadata", message=OBJECT_META),
        2: Field("data", map_value="bytes"),
        3: _s("type"),
        4: Field("stringData", map_value="string"),
        5: Field("immutable", scalar="bool"),
    },
    ("v1", "ConfigMap"): {
        1: Field("metadata", message=OBJECT_META),
        2: Field("data", map_value="string"),
        3: Field("binaryData", map_value="bytes"),
        4: Field("immutable", scalar="bool"),
    },
    ("v1", "ServiceAccount"): {
        1: Field("metadata", message=OBJECT_META),
        2: Field("secrets", repeated=True, message=_OBJECT_REFERENCE),
        3: Field("imagePullSecrets", repeated=True, message={1: _s("name")}),
        4: Field("automountServiceAccountToken", scalar="bool"),
    },
}
"""The kinds decoded, by (apiVersion, kind): what kubectl creates imperatively."""

_UNKNOWN: Mapping[int, Field] = {
    1: Field("typeMeta", message={1: _s("apiVersion"), 2: _s("kind")}),
    2: Field("raw", scalar="bytes"),
    3: _s("contentEncoding"),
    4: _s("contentType"),
}
_MAP_ENTRY: Mapping[MapValue, Mapping[int, Field]] = {
    "string": {1: _s("key"), 2: _s("value")},
    "bytes": {1: _s("key"), 2: Field("value", scalar="bytes")},
}


class _Reader:
    """A cursor over one message's bytes; every read checks the bounds."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def done(self) -> bool:
        return self.pos >= len(self.data)

    def varint(self) -> int:
        result = 0
        for shift in range(0, 70, 7):
            if self.pos >= len(self.data):
                raise _malformed("truncated varint")
            byte = self.data[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
        raise _malformed("varint longer than 10 bytes")

    def take(self, n: int) -> bytes:
        if n > len(self.data) - self.pos:
            raise _malformed(
                f"truncated field: {n} bytes announced, {len(self.data) - self.pos} left"
            )
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def skip(self, wire: int) -> None:
        """Step over a field the tables do not name."""
        if wire == 0:
            self.varint()
        elif wire == 1:
            self.take(8)
        elif wire == 2:
            self.take(self.varint())
        elif wire == 5:
            self.take(4)
        else:
            raise _malformed(f"unsupported wire type {wire}")


def _malformed(detail: str) -> APIError:
    return bad_request(f"invalid protobuf body: {detail}")


def _unsupported(what: str) -> APIError:
    return APIError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - protobuf is decoded only for "
        f"v1 {', '.join(sorted(k for _, k in KINDS))} (got {what}); "
        "accepted media types include: application/json, application/yaml",
    )


def _signed64(value: int) -> int:
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


def _scalar(kind: Scalar, wire: int, r: _Reader, name: str) -> Any:
    if kind in ("string", "bytes"):
        if wire != 2:
            raise _malformed(f"field {name}: wire type {wire}, expected length-delimited")
        raw = r.take(r.varint())
        if kind == "bytes":
            return raw
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _malformed(f"field {name}: invalid UTF-8") from None
    if wire != 0:
        raise _malformed(f"field {name}: wire type {wire}, expected varint")
    value = r.varint()
    return bool(value) if kind == "bool" else _signed64(value)


def _message(data: bytes, table: Mapping[int, Field]) -> dict[str, Any]:
    """Decode one message; bytes values stay ``bytes`` (callers base64 them for JSON)."""
    r = _Reader(data)
    out: dict[str, Any] = {}
    while not r.done():
        key = r.varint()
        number, wire = key >> 3, key & 7
        if number == 0:
            raise _malformed("field number 0")
        field = table.get(number)
        if field is None:
            r.skip(wire)
            continue
        value: Any
        if field.scalar is not None:
            value = _scalar(field.scalar, wire, r, field.name)
            if not field.repeated and field.scalar != "bool" and not value:
                # Go emits its plain strings and ints even when empty, and its JSON drops
                # them (omitempty); bools here are pointers, so a sent false means false.
                continue
        else:
            if wire != 2:
                raise _malformed(f"field {field.name}: wire type {wire}, expected length-delimited")
            payload = r.take(r.varint())
            if field.map_value is not None:
                entry = _message(payload, _MAP_ENTRY[field.map_value])
                default: Any = b"" if field.map_value == "bytes" else ""
                # Later entries win, as in protobuf; a missing key or value is its default.
                out.setdefault(field.name, {})[entry.get("key", "")] = entry.get("value", default)
                continue
            assert field.message is not None
            value = _message(payload, field.message)
        if field.repeated:
            out.setdefault(field.name, []).append(value)
        else:
            out[field.name] = value
    return out


def _jsonable(value: Any) -> Any:
    """``bytes`` as JSON carries them: standard base64 (Secret.data, ConfigMap.binaryData)."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def decode(body: bytes) -> dict[str, Any]:
    """The JSON-shaped object of a Kubernetes protobuf body.

    Raises a 400 ``APIError`` for bytes that are not a well-formed envelope and a 415
    for a kind (or an encoding) that is not decoded here.
    """
    if not body.startswith(MAGIC):
        raise _malformed("missing the k8s\\x00 prefix")
    envelope = _message(body[len(MAGIC) :], _UNKNOWN)
    if envelope.get("contentEncoding"):
        raise _unsupported(f"content encoding {envelope['contentEncoding']!r}")
    type_meta = envelope.get("typeMeta", {})
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    table = KINDS.get((api_version, kind))
    if table is None:
        raise _unsupported(f"{api_version or '<no apiVersion>'} {kind or '<no kind>'}")
    obj = _jsonable(_message(envelope.get("raw", b""), table))
    assert isinstance(obj, dict)
    return {"apiVersion": api_version, "kind": kind, **obj}
