"""Request bodies the server accepts: bounded in size and depth, YAML without aliases.

kube-apiserver refuses bodies over 3 MiB (413) and limits how deep JSON and YAML may
nest. Without those limits a 404-byte YAML alias bomb expands into hundreds of MB,
and a JSON body nested 300 deep is accepted but cannot be serialized back (orjson
stops at 255 levels), so every later LIST of its kind would fail. Bodies are
therefore checked here before any operation sees them, and every object is
serialized once before it is stored (`encode_object`), so what is stored can always
be served back.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

import orjson
import yaml
from aiohttp import web

from . import errors
from .errors import APIError

MAX_BODY_BYTES = 3 * 1024 * 1024
# Above this, a body is decoded and a write worked out off the server's loop (`writes`):
# decoding, checking and encoding it takes milliseconds.
LARGE_BYTES = 256 * 1024
# Deep enough for any CRD schema (Sedna's nest about 40 levels), far below orjson's 255.
MAX_DEPTH = 128


# How long a request body may take to arrive, in all (not per read), as Go's
# http.Server.ReadTimeout bounds kube-apiserver's: 300 bodies trickled one byte every 2 s
# were otherwise held open for ever.
DEFAULT_BODY_TIMEOUT = 30.0


@dataclass
class BodyDeadline:
    """The body timeout of one server and how many bodies it has cut."""

    seconds: float = DEFAULT_BODY_TIMEOUT
    cut: int = 0


BODY_DEADLINE = web.AppKey("body_deadline", BodyDeadline)


def body_timeout(request: web.Request) -> float:
    deadline = request.app.get(BODY_DEADLINE)
    return deadline.seconds if deadline is not None else DEFAULT_BODY_TIMEOUT


def cut_slow_body(request: web.Request) -> APIError:
    """408 for a body that did not arrive in time; the connection is closed after it."""
    request.protocol.force_close()
    deadline = request.app.get(BODY_DEADLINE)
    if deadline is not None:
        deadline.cut += 1
    return APIError(
        408,
        "Timeout",
        f"the request body did not arrive within {body_timeout(request):g} s",
    )


def too_large(size: int, limit: int = MAX_BODY_BYTES) -> APIError:
    return APIError(
        413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}, got {size}"
    )


def depth_of(value: Any, limit: int = MAX_DEPTH) -> int:
    """Nesting depth of a decoded body, iteratively; stops counting past limit."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return depth
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest


def check_depth(value: Any, limit: int = MAX_DEPTH) -> Any:
    if depth_of(value, limit) > limit:
        raise errors.bad_request(f"the request body nests deeper than {limit} levels")
    return value


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses aliases (the alias bomb) and nesting beyond MAX_DEPTH.

    kubectl never sends YAML with aliases (it converts to JSON first), so refusing
    them costs no real client anything.
    """

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None, None, "YAML aliases are not accepted", event.start_mark
            )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"YAML nests deeper than {MAX_DEPTH} levels", None
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def load_yaml(raw: bytes) -> Any:
    try:
        return yaml.load(raw, Loader=_BoundedLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise errors.bad_request(f"invalid YAML body: {exc}") from None
    except RecursionError:
        raise errors.bad_request("the request body nests too deep") from None


def load_json(raw: bytes) -> Any:
    """orjson's own limit is 1024 levels; ours is checked on the result."""
    return check_depth(orjson.loads(raw))


def _dumps(obj: Any) -> bytes:
    try:
        return orjson.dumps(obj)
    except orjson.JSONEncodeError as exc:
        raise APIError(
            422, "Invalid", f"the object cannot be stored and served back: {exc}"
        ) from None


def encode_object(obj: Any) -> bytes:
    """The object as it will be served; refuses one that cannot be (depth, size, types)."""
    raw = _dumps(obj)
    if len(raw) > MAX_BODY_BYTES:
        raise too_large(len(raw))
    return raw


# Where an encoded object's resourceVersion goes until the store assigns it: random per
# process, so no client can send it (and it is never served: `Encoded.with_rv` fills it).
_RV_HOLE = f"rv-hole-{secrets.token_hex(16)}"
_RV_HOLE_BYTES = _RV_HOLE.encode()


class Encoded:
    """An object's JSON with a hole where its resourceVersion goes.

    Encoding an object of megabytes takes milliseconds. The store assigns the
    resourceVersion only when it writes (on the server's loop), so a write prepared
    off the loop encodes the object with this hole there, and the loop only splices
    the version in (one copy of the bytes, `with_rv`). The bytes are those
    ``orjson.dumps`` gives for the object once its version is set: the hole takes the
    place, in key order, that the version gets.
    """

    __slots__ = ("_at", "_last", "_raw")

    def __init__(self, obj: dict[str, Any]) -> None:
        """Encode ``obj`` (not changed: its metadata is copied to hold the hole).

        Refuses (422) what orjson cannot encode, and (413) what would be too large
        whatever version it gets.
        """
        meta = obj["metadata"]
        self._raw = _dumps(dict(obj, metadata=dict(meta, resourceVersion=_RV_HOLE)))
        self._at = self._raw.find(_RV_HOLE_BYTES)
        self._last: tuple[str, bytes] | None = None
        if self.size("1") > MAX_BODY_BYTES:
            raise too_large(self.size("1"))

    def size(self, rv: str) -> int:
        """The length of the JSON with version ``rv``."""
        return len(self._raw) - len(_RV_HOLE) + len(rv.encode())

    def with_rv(self, rv: str) -> bytes:
        """The object's JSON with resourceVersion ``rv`` (413 when that is too large)."""
        if self._last is not None and self._last[0] == rv:
            return self._last[1]
        size = self.size(rv)
        if size > MAX_BODY_BYTES:
            raise too_large(size)
        view = memoryview(self._raw)
        raw = b"".join((view[: self._at], rv.encode(), view[self._at + len(_RV_HOLE) :]))
        self._last = (rv, raw)
        return raw
