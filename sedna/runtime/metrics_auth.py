"""Who may read /metrics: a bearer token from a file or a Secret.

/metrics names every node (`lc_queue_depth{node}`) and job, so it is not public:
controller-runtime serves its metrics behind authentication too, while the kubelet's
probes stay open. Here the token is a static one (a file, typically a mounted Secret,
or a Secret read through the API); a scraper sends `Authorization: Bearer <token>`.

Every answer is decided without I/O per request: the file is re-read only when it
changes, the Secret at most once per `ttl` seconds, so a flood of requests with made-up
tokens costs the API nothing.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from loguru import logger

from sedna.runtime.messaging.auth import (
    ProblemLog,
    file_token_provider,
    parse_tokens,
    secret_text,
    token_valid,
)

TokenSource = Callable[[], Iterable[str]]
SECRET_KEY = "token"
SECRET_TTL_SECONDS = 10.0
# RFC 6750 token68, and no longer than any token worth checking
_BEARER = re.compile(r"Bearer ([A-Za-z0-9\-._~+/]+=*)", re.IGNORECASE)
MAX_AUTHORIZATION_CHARS = 4096


def file_tokens(path: str | os.PathLike[str]) -> TokenSource:
    """Tokens from a file (one a line), re-read when it changes (a mounted Secret's
    rotation swaps a symlink: the inode changes); an unreadable file is no token."""
    return file_token_provider(path, what="metrics token file")


def secret_tokens(
    get_secret: Callable[[str, str], Mapping[str, Any] | None],
    ref: str,
    *,
    ttl: float = SECRET_TTL_SECONDS,
    now: Callable[[], float],
) -> TokenSource:
    """Tokens from key `token` of Secret `ref` ("namespace/name"), read at most every `ttl` s.

    `get_secret` returns the Secret as the API serves it, or None when it is absent.
    The cache is the one token set; while the API fails, the last one read is kept.
    """
    namespace, _, name = ref.partition("/")
    lock = threading.Lock()
    state: dict[str, Any] = {"at": None, "tokens": frozenset()}
    problem = ProblemLog(f"metrics token Secret {ref}", "/metrics refuses every scraper")

    def read() -> frozenset[str] | None:
        try:
            secret = get_secret(namespace, name)
        except Exception as exc:  # the API is down: keep what was read last
            problem(f"cannot be read ({type(exc).__name__})")
            return None
        if secret is None:
            problem("not found")
            return frozenset()
        try:
            text = secret_text(secret, SECRET_KEY)
        except ValueError as exc:
            problem(str(exc))
            return frozenset()
        tokens = parse_tokens(text)
        problem(None if tokens else f"key {SECRET_KEY!r} is empty")
        return tokens

    def provide() -> frozenset[str]:
        with lock:
            at = state["at"]
            if at is None or now() - at >= ttl:
                fresh = read()
                state["at"] = now()
                if fresh is not None:
                    state["tokens"] = fresh
            tokens_now: frozenset[str] = state["tokens"]
            return tokens_now

    return provide


def bearer_token(values: list[str] | None) -> str | None:
    """The token of exactly one well-formed `Authorization: Bearer <token>`, else None."""
    if not values or len(values) != 1:
        return None  # none, or several (which one would count?)
    value = values[0].strip()
    if len(value) > MAX_AUTHORIZATION_CHARS:
        return None
    match = _BEARER.fullmatch(value)
    return match.group(1) if match else None


class BearerAuthenticator:
    """Decides a request's `Authorization` headers: 200 to serve, 401 to refuse."""

    def __init__(self, tokens: TokenSource) -> None:
        self._tokens = tokens

    def status(self, values: list[str] | None) -> int:
        token = bearer_token(values)
        if token is None:
            return 401
        try:
            valid = frozenset(self._tokens())
        except Exception as exc:  # a broken source refuses, it does not crash the server
            logger.error("metrics token source failed ({})", type(exc).__name__)
            return 401
        return 200 if valid and token_valid(token, valid) else 401
