"""List pagination: ``limit`` and ``continue`` as kube-apiserver serves them.

A paginated list is one consistent snapshot cut into pages: every page reports the
resourceVersion of the first and shows the objects as they were then, whatever was
written in between. The store keeps only the latest version of each object, so a
later page rebuilds its snapshot by undoing, newest first, the events retained in the
watch history since the token's resourceVersion (``Store.snapshot``). We chose that
over a cache of snapshots keyed by token because:

- tokens stay stateless, as etcd's are: the same token works twice, any number of
  lists can be in flight, and no per-list memory waits for a client that never comes
  back;
- a token expires for the very reason etcd's do: the history it needs was compacted.
  The watch history and the list snapshots age together, so ``faults.compact()`` (or
  a busy server overrunning the ring) sends 410 to old watches and old tokens alike;
- a page costs a range read of the resource's key order (``keyorder``) from the
  token's key, as far as the page goes, plus the retained events since the token's
  version; nothing is copied.

Tokens have etcd3's format (base64url of ``{"v","rv","start"}``, ``start`` being the
last key returned plus NUL), so clients that peek at them, and the messages for bad
ones, match the real server's. Keys are ``namespace/name`` (just ``name`` when the
list is within one namespace or of a cluster-scoped kind) and ordered as etcd orders
them: by bytes, not by (namespace, name) tuples.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from . import errors
from .keyorder import Snapshot, key_range
from .selectors import Matcher

TOKEN_VERSION = "meta.k8s.io/v1"
LATEST = -1  # token rv meaning "go on at the current version" (handed out with a 410)
_LIMIT_RE = re.compile(r"^[+-]?[0-9]+$")
_B64URL_RE = re.compile(r"^[A-Za-z0-9_-]*$")
_INVALID = "invalid continue token: continue key is not valid"


@dataclass(frozen=True)
class Continue:
    """A decoded continue token: where the next page starts and in which snapshot."""

    rv: int  # LATEST (or any negative) for the current version
    start: str  # first key the next page may hold


@dataclass(frozen=True)
class Page:
    """One page of a list and how to get the next."""

    items: list[dict[str, Any]]
    next_start: str | None  # None: this was the last page
    remaining: int | None  # only for unfiltered lists, as kube counts it


def parse_limit(raw: str | None) -> int:
    """``limit`` as an int; 0 (and negatives) mean no limit, as in kube."""
    if raw is None or raw == "":
        return 0
    if not _LIMIT_RE.match(raw):
        raise errors.bad_request(f'limit: Invalid value: "{raw}": must be an integer')
    return max(0, int(raw))


def list_options(query: Mapping[str, str]) -> tuple[int, Continue | None]:
    """``limit`` and the decoded ``continue`` of a list request (400s for bad values)."""
    limit = parse_limit(query.get("limit"))
    raw = query.get("continue")
    if not raw:
        return limit, None
    cont = decode_continue(raw)
    # kube lets "0" through: it means "any version", which the token pins anyway
    if query.get("resourceVersion") not in (None, "", "0"):
        raise errors.bad_request("specifying resource version is not allowed when using continue")
    return limit, cont


def encode_continue(start: str, rv: int) -> str:
    """The opaque token for a page starting at ``start`` in snapshot ``rv``."""
    raw = orjson.dumps({"v": TOKEN_VERSION, "rv": rv, "start": start})
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def decode_continue(token: str) -> Continue:
    """Parse a token, rejecting what etcd3's ``DecodeContinue`` rejects."""
    if not _B64URL_RE.match(token) or len(token) % 4 == 1:
        raise errors.bad_request(f"{_INVALID}: illegal base64 data")
    try:
        data = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        body = orjson.loads(data)
    except (binascii.Error, ValueError):
        raise errors.bad_request(f"{_INVALID}: not a JSON continue token") from None
    if not isinstance(body, dict):
        raise errors.bad_request(f"{_INVALID}: not a JSON continue token")
    version, rv, start = body.get("v"), body.get("rv", 0), body.get("start", "")
    if version != TOKEN_VERSION:
        raise errors.bad_request(
            f'{_INVALID}: server does not recognize this encoded version "{version}"'
        )
    if not isinstance(rv, int) or isinstance(rv, bool) or not isinstance(start, str):
        raise errors.bad_request(f"{_INVALID}: malformed fields")
    if rv == 0:
        raise errors.bad_request(
            f"{_INVALID}: incorrect encoded start resourceVersion (version {TOKEN_VERSION})"
        )
    if not start:
        raise errors.bad_request(f"{_INVALID}: encoded start key empty (version {TOKEN_VERSION})")
    path = start if start.startswith("/") else "/" + start
    if not _is_clean(path):
        # etcd3 refuses keys that path.Clean would change (no climbing out of the prefix)
        raise errors.bad_request(f"{_INVALID}: {start}")
    return Continue(rv, path[1:])


def _is_clean(path: str) -> bool:
    """Whether Go's ``path.Clean`` leaves this absolute path as it is."""
    if path == "/":
        return True
    if path.endswith("/") or "//" in path:
        return False
    return all(seg not in (".", "..") for seg in path[1:].split("/"))


def page(
    snapshot: Snapshot,
    scope: str | None,
    matcher: Matcher | None,
    limit: int,
    start: str,
) -> Page:
    """Up to ``limit`` matching objects from ``start`` on, in key order.

    Reads the key range from ``start`` only as far as the page needs (etcd's range
    read). Pages are filled after filtering, as the watch cache fills them, so a
    selector never yields a short page while more matches remain; and, as there, the
    count of what remains is given only without selectors (with them it would be a
    guess).
    """
    lo, hi = key_range(scope, start)
    items: list[dict[str, Any]] = []
    last = ""
    more = False
    for k, obj in snapshot.items(lo, hi):
        if obj is None or (matcher is not None and not matcher(obj)):
            continue
        if limit and len(items) >= limit:
            more = True
            break
        items.append(obj)
        last = k
    if not more:
        return Page(items, None, None)
    remaining = snapshot.count(lo, hi) - limit if matcher is None else None
    rel = last[len(scope) + 1 :] if scope is not None else last
    return Page(items, rel + "\x00", remaining)
