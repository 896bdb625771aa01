"""A URL parser with Go's ``net/url`` results for the parts the mount rules use.

The container path of a downloaded object is ``/downloads/<host><path>``
with Go's *decoded* host and path, and a host path's container path uses the
decoded path too. The storage initializer and the workers rely on those
exact strings, so we reproduce ``url.Parse`` for scheme, host and path
(including its errors) instead of using ``urllib.parse``, which neither
decodes nor rejects what Go rejects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

__all__ = ["ParsedURL", "parse_url"]

_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
# characters Go accepts unescaped in a host (besides letters and digits)
_HOST_EXTRA = set("-._~!$&'()*+,;=:[]<>\"%")


@dataclass(frozen=True)
class ParsedURL:
    """The parsed parts the mount rules need; ``host`` keeps any port, like Go's ``Host``."""

    scheme: str
    host: str
    path: str


def _get_scheme(raw: str) -> tuple[str, str]:
    for i, c in enumerate(raw):
        if c.isascii() and c.isalpha():
            continue
        if c.isascii() and (c.isdigit() or c in "+-."):
            if i == 0:
                return "", raw
            continue
        if c == ":":
            if i == 0:
                raise ValueError("missing protocol scheme")
            return raw[:i], raw[i + 1 :]
        return "", raw
    return "", raw


def _unescape(s: str, what: str) -> str:
    m = _BAD_ESCAPE.search(s)
    if m is not None:
        raise ValueError(f"invalid URL escape {s[m.start() : m.start() + 3]!r} in {what}")
    return unquote(s, errors="replace")


def _valid_optional_port(port: str) -> bool:
    if port == "":
        return True
    return port[0] == ":" and all(c in "0123456789" for c in port[1:])


def _parse_host(host: str) -> str:
    if host.startswith("["):
        end = host.find("]")
        if end < 0:
            raise ValueError("missing ']' in host")
        if not _valid_optional_port(host[end + 1 :]):
            raise ValueError(f"invalid port {host[end + 1 :]!r} after host")
    else:
        colon = host.rfind(":")
        if colon != -1 and not _valid_optional_port(host[colon:]):
            raise ValueError(f"invalid port {host[colon:]!r} after host")
    for c in host:
        if c.isascii() and not c.isalnum() and c not in _HOST_EXTRA:
            raise ValueError(f"invalid character {c!r} in host name")
    return _unescape(host, "host")


def parse_url(raw: str) -> ParsedURL:
    """Parse ``raw`` like Go's ``url.Parse``; raise ``ValueError`` where Go errors.

    Two stricter rules than Go: an empty URL, and an opaque URL such as
    ``s3:bucket/key`` (Go parses it but yields an empty path, which would
    mount or download the wrong thing).
    """
    if raw == "":
        raise ValueError("empty URL")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in raw):
        raise ValueError("invalid control character in URL")
    rest = raw.split("#", 1)[0]
    scheme, rest = _get_scheme(rest)
    scheme = scheme.lower()
    rest = rest.split("?", 1)[0]
    if not rest.startswith("/"):
        if scheme:
            raise ValueError(f"opaque URL {raw!r} has no path; use {scheme}://host/path")
        first = rest.split("/", 1)[0]
        if ":" in first:
            raise ValueError("first path segment in URL cannot contain colon")
    host = ""
    if (scheme or not rest.startswith("///")) and rest.startswith("//"):
        authority, slash, tail = rest[2:].partition("/")
        rest = slash + tail
        hostport = authority.rpartition("@")[2]
        host = _parse_host(hostport)
    return ParsedURL(scheme=scheme, host=host, path=_unescape(rest, "path"))
