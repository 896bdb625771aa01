"""The LC wire format: Sedna's `model.Message` as Go's encoding/json writes and reads it.

A frame is `{"header": {namespace, resourceKind, resourceName, operation}, "content": ...}`
where `content` is a Go `[]byte`, hence a padded standard base64 string of the JSON
payload. Gorilla's WriteJSON uses a json.Encoder, which ends every frame with a newline;
we do the same so that a capture of our frames matches the Go GM's byte for byte
(except for the payload's key order, which Go takes from its structs).

Decoding is stricter than Go's ReadJSON (which silently zero-fills missing fields):
a frame that is not exactly this shape is refused with a `FrameError` whose `reason`
is a metric label, so an operator can see *why* an LC's reports go nowhere.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from json.encoder import encode_basestring_ascii as _quote
from typing import Any

import orjson

CREDENTIAL_ANNOTATION = "sedna.io/credential"

_HEADER_FIELDS = ("namespace", "resourceKind", "resourceName", "operation")
# LC reports are a few levels deep; deeper content would only cost handlers stack
MAX_DEPTH = 32


def _too_deep(value: Any) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return False


MAX_NAME_LENGTH = 253
"""A Kubernetes object name is a DNS subdomain: at most 253 characters."""
# namespaces are DNS labels; kinds and operations are short words
_FIELD_LIMITS = {"namespace": 63, "resourceKind": 63, "operation": 63}


class Reason(StrEnum):
    """Label values of lc_messages_rejected{reason}: one per way a message can be refused."""

    INVALID_JSON = "invalid_json"
    INVALID_BASE64 = "invalid_base64"
    PAYLOAD_NOT_JSON = "payload_not_json"
    MISSING_HEADER = "missing_header"
    MISSING_FIELD = "missing_field"
    UNKNOWN_KIND = "unknown_kind"
    UNSUPPORTED_OPERATION = "unsupported_operation"
    BINARY_FRAME = "binary_frame"
    FRAME_TOO_LARGE = "frame_too_large"
    HANDLER_BACKLOG = "handler_backlog"
    PLAIN_CREDENTIALS = "plain_credentials"
    UNAUTHORIZED = "unauthorized"
    MISSING_NODE_NAME = "missing_node_name"
    NOT_ROUTED = "not_routed"
    NODE_MISMATCH = "node_mismatch"
    ADDRESS_MISMATCH = "address_mismatch"
    ALREADY_CONNECTED = "already_connected"
    INTERNAL_ERROR = "internal_error"
    TOO_DEEP = "too_deep"
    TOO_MANY_CONNECTIONS = "too_many_connections"
    BUFFER_FULL = "buffer_full"
    INVALID_NAME = "invalid_name"
    READ_TIMEOUT = "read_timeout"


@dataclass(frozen=True, slots=True)
class Header:
    """The routing part of a message; `kind` is always lower-cased."""

    namespace: str
    kind: str
    name: str
    operation: str

    @property
    def key(self) -> str:
        """The coalescing key of Sedna's node store: kind/namespace/name."""
        return f"{self.kind}/{self.namespace}/{self.name}"


class FrameError(Exception):
    """A frame the GM refuses; `detail` never contains payload bytes (they may be secret)."""

    def __init__(self, reason: Reason, detail: str, header: Header | None = None) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
        self.header = header


def object_header(obj: Mapping[str, Any], operation: str) -> Header:
    """Route an API object the way Sedna does: lower-cased kind, namespace and name from metadata.

    Raises ValueError for an object that has no kind or name: that is a caller bug, and
    sending it would make the LC index it under an empty key.
    """
    kind = obj.get("kind")
    meta = obj.get("metadata")
    if not isinstance(kind, str) or not kind:
        raise ValueError("object to send has no kind")
    if not isinstance(meta, Mapping):
        raise ValueError(f"{kind} to send has no metadata")
    name = meta.get("name")
    namespace = meta.get("namespace") or ""
    if not isinstance(name, str) or not name or not isinstance(namespace, str):
        raise ValueError(f"{kind} to send has no metadata.name")
    return Header(namespace=namespace, kind=kind.lower(), name=name, operation=operation)


def has_credential(obj: Mapping[str, Any]) -> bool:
    """True when Sedna attached a secret for the LC to this object."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return False
    annotations = meta.get("annotations")
    return isinstance(annotations, Mapping) and CREDENTIAL_ANNOTATION in annotations


# The fallback for what orjson refuses: built once (json.dumps with options builds an
# encoder per call); API objects are trees, so no circular-reference bookkeeping.
_PAYLOAD_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, check_circular=False)
# Values JSON has no form for raise, as with json, instead of orjson's own encoding.
_ORJSON_OPTIONS = (
    orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
)


def encode_payload(obj: Mapping[str, Any]) -> bytes:
    """Compact JSON like Go's json.Marshal, made at send time: later edits of obj stay out.

    orjson writes the same compact UTF-8 JSON about 5x faster than json (a job's
    payload is encoded on every event of it); json takes what orjson refuses
    (integers beyond 64 bits, nesting beyond 255) and raises for what neither encodes.
    """
    try:
        return orjson.dumps(obj, option=_ORJSON_OPTIONS)
    except orjson.JSONEncodeError:
        pass
    try:
        return _PAYLOAD_ENCODER.encode(obj).encode()
    except RecursionError:
        raise ValueError("object is circular or nested too deeply") from None


def encode_frame(header: Header, payload: bytes) -> str:
    """One text frame in the exact field order of Sedna's model.Message, newline-terminated."""
    content = base64.b64encode(payload).decode("ascii")
    return (
        f'{{"header":{{"namespace":{_quote(header.namespace)},'
        f'"resourceKind":{_quote(header.kind)},'
        f'"resourceName":{_quote(header.name)},'
        f'"operation":{_quote(header.operation)}}},'
        f'"content":"{content}"}}\n'
    )


def _is_bare_empty_header(doc: Mapping[str, Any]) -> bool:
    """The LC's hello frame: a bare MessageHeader with every field empty."""
    return bool(doc) and all(k in _HEADER_FIELDS and v == "" for k, v in doc.items())


def decode_frame(text: str) -> tuple[Header, bytes] | None:
    """Parse one text frame into its header and raw payload bytes.

    Returns None for the LC's initial bare empty header (Go's LC writes
    `MessageHeader{}` right after dialing), which carries nothing and must be
    accepted. Raises FrameError for anything else that is not a well-formed message.
    """
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise FrameError(Reason.INVALID_JSON, f"frame is not JSON ({exc})") from None
    except RecursionError:
        raise FrameError(Reason.TOO_DEEP, "frame nests too deep") from None
    if _too_deep(doc):
        raise FrameError(Reason.TOO_DEEP, f"frame nests deeper than {MAX_DEPTH} levels")
    if not isinstance(doc, dict):
        raise FrameError(Reason.INVALID_JSON, "frame is not a JSON object")
    if "header" not in doc:
        if _is_bare_empty_header(doc):
            return None
        raise FrameError(Reason.MISSING_HEADER, "frame has no header")
    raw_header = doc["header"]
    if not isinstance(raw_header, dict):
        raise FrameError(Reason.MISSING_HEADER, "header is not a JSON object")
    values: dict[str, str] = {}
    for field in _HEADER_FIELDS:
        value = raw_header.get(field)
        if not isinstance(value, str):
            raise FrameError(Reason.MISSING_FIELD, f"header.{field} is missing or not a string")
        limit = _FIELD_LIMITS.get(field, MAX_NAME_LENGTH)
        if len(value) > limit:
            # no header on the error: the over-long value is not logged
            raise FrameError(
                Reason.INVALID_NAME,
                f"header.{field} is {len(value)} characters long, over {limit}",
            )
        values[field] = value
    header = Header(
        namespace=values["namespace"],
        kind=values["resourceKind"].lower(),
        name=values["resourceName"],
        operation=values["operation"],
    )
    if not header.kind or not header.name or not header.operation:
        raise FrameError(
            Reason.MISSING_FIELD,
            "header.resourceKind, resourceName and operation must be set",
            header,
        )
    content = doc.get("content")
    if not isinstance(content, str):
        raise FrameError(Reason.MISSING_FIELD, "content is missing or not a string", header)
    try:
        payload = base64.b64decode(content, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise FrameError(Reason.INVALID_BASE64, f"content is not base64 ({exc})", header) from None
    return header, payload


def decode_payload(payload: bytes, header: Header) -> dict[str, Any]:
    """The JSON object an upstream handler receives; anything else is refused."""
    try:
        content = json.loads(payload)
    except UnicodeDecodeError:
        # Its message would quote a payload byte; say only what is wrong.
        raise FrameError(Reason.PAYLOAD_NOT_JSON, "content is not UTF-8 JSON", header) from None
    except ValueError as exc:
        raise FrameError(Reason.PAYLOAD_NOT_JSON, f"content is not JSON ({exc})", header) from None
    except RecursionError:
        raise FrameError(Reason.TOO_DEEP, "content nests too deep", header) from None
    if _too_deep(content):
        raise FrameError(Reason.TOO_DEEP, f"content nests deeper than {MAX_DEPTH} levels", header)
    if not isinstance(content, dict):
        raise FrameError(Reason.PAYLOAD_NOT_JSON, "content is not a JSON object", header)
    return content
