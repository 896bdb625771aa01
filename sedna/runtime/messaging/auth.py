"""LC authentication (bearer tokens) and the server's TLS context.

Sedna's Go GM accepts any client that can reach its port and then ships it job
specs and, through the `sedna.io/credential` annotation, storage credentials. We
check a bearer token before the websocket upgrade instead, so an unauthenticated
client gets an HTTP 401 and never a single frame.

Tokens come from a *provider*, a function returning the currently valid set, called
per connection attempt so that rotation needs no restart. A source may hold several
tokens, one per line, so that an old and a new token can overlap during rotation.
The providers here take no Kubernetes client: the caller passes a `get_secret`
function (typically an informer lister lookup), which keeps this module free of I/O
choices.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import ssl
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from loguru import logger

from sedna.runtime.config import ConfigError, TLSConfig

TokenProvider = Callable[[], Iterable[str]]
NodeTokenProvider = Callable[[str], Iterable[str]]
SECRET_TOKEN_KEY = "token"
NODE_TOKEN_SECRET_PREFIX = "sedna-lc-token-"
NODE_LABEL = "sedna.io/lc-node"


def node_token_secret_name(node: str) -> str:
    """The Secret that holds the token of node (node names are DNS subdomains)."""
    return NODE_TOKEN_SECRET_PREFIX + node


def node_token_provider(
    get_secret: Callable[[str, str], Mapping[str, Any] | None], namespace: str
) -> NodeTokenProvider:
    """Per-node tokens: node -> the tokens in Secret `namespace/sedna-lc-token-<node>`.

    A token proves one node only; the Secret's `sedna.io/lc-node` label must name the
    same node (a Secret copied under another name grants nothing).
    """

    def provide(node: str) -> frozenset[str]:
        secret = get_secret(namespace, node_token_secret_name(node))
        if secret is None:
            return frozenset()
        labels = (secret.get("metadata") or {}).get("labels") or {}
        if labels.get(NODE_LABEL) != node:
            logger.error(
                "node token secret {}/{} lacks label {}={}; refusing that node",
                namespace,
                node_token_secret_name(node),
                NODE_LABEL,
                node,
            )
            return frozenset()
        return secret_token_provider(lambda _ns, _name: secret, f"{namespace}/x")()

    return provide


def credential_id(token: str | None) -> str | None:
    """A stable identity of a credential that does not reveal it (for replace decisions)."""
    return None if token is None else hashlib.sha256(token.encode()).hexdigest()[:16]


def parse_tokens(text: str) -> frozenset[str]:
    """Every non-empty line, stripped, is a valid token."""
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


def file_token_provider(
    path: str | os.PathLike[str], *, optional: bool = False, what: str = "websocket token file"
) -> Callable[[], frozenset[str]]:
    """Tokens from a file, re-read whenever the file changes (mtime, size or inode).

    Kubernetes updates a mounted Secret by swapping a symlink, which changes the
    inode that `os.stat` sees, so rotation is picked up on the next connection. An
    unreadable file yields no tokens (every LC is refused) and is logged once per
    change of state, not once per connection attempt; with `optional`, a file that
    does not exist is no tokens and nothing to log. `what` names the file in the log.
    """
    lock = threading.Lock()
    state: dict[str, Any] = {"sig": None, "tokens": frozenset(), "error": None}

    def provide() -> frozenset[str]:
        with lock:
            try:
                st = os.stat(path)
                sig = (st.st_mtime_ns, st.st_size, st.st_ino)
                if sig != state["sig"]:
                    with open(path, encoding="utf-8") as fh:
                        tokens = parse_tokens(fh.read())
                    if not tokens:
                        logger.error("{} {} holds no token", what, path)
                    state.update(sig=sig, tokens=tokens, error=None)
            except (OSError, UnicodeDecodeError) as exc:
                err = type(exc).__name__
                if state["error"] != err and not (optional and isinstance(exc, FileNotFoundError)):
                    logger.error("cannot read {} {}: {}", what, path, err)
                state.update(sig=None, tokens=frozenset(), error=err)
            tokens_now: frozenset[str] = state["tokens"]
            return tokens_now

    return provide


def _split_ref(ref: str) -> tuple[str, str]:
    parts = ref.split("/")
    if len(parts) != 2 or not all(parts):
        raise ConfigError(f"websocket.tokenSecret: expected 'namespace/name', got {ref!r}")
    return parts[0], parts[1]


class ProblemLog:
    """Logs a token source's problem once per change of state, not once per request.

    `None` says the source is fine again, so the same problem coming back is logged anew.
    """

    def __init__(self, what: str, consequence: str) -> None:
        self._what = what
        self._consequence = consequence
        self._last: str | None = None
        self._lock = threading.Lock()

    def __call__(self, text: str | None) -> None:
        with self._lock:
            if text is not None and text != self._last:
                logger.error("{}: {}; {}", self._what, text, self._consequence)
            self._last = text


def secret_text(secret: Mapping[str, Any], key: str) -> str:
    """The text under `key` of a Secret, as the API serves it (base64 `data`) or as it
    was written (`stringData`); ValueError saying what is wrong with it."""
    data = secret.get("data") or {}
    string_data = secret.get("stringData") or {}
    if isinstance(data, Mapping) and isinstance(data.get(key), str):
        try:
            return base64.b64decode(data[key], validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            raise ValueError(f"key {key!r} is not valid base64 UTF-8") from None
    if isinstance(string_data, Mapping) and isinstance(string_data.get(key), str):
        return str(string_data[key])
    raise ValueError(f"has no key {key!r}")


def secret_token_provider(
    get_secret: Callable[[str, str], Mapping[str, Any] | None], ref: str
) -> Callable[[], frozenset[str]]:
    """Tokens from the key `token` of the Secret `ref` ("namespace/name").

    `get_secret(namespace, name)` returns the Secret as the API serves it (with
    base64 `data`; `stringData` is accepted too) or None when it does not exist. It is
    called on every connection attempt, so it should read a cache such as a lister.
    """
    namespace, name = _split_ref(ref)
    problem = ProblemLog(f"websocket token secret {namespace}/{name}", "every LC is refused")

    def provide() -> frozenset[str]:
        secret = get_secret(namespace, name)
        if secret is None:
            problem("not found")
            return frozenset()
        try:
            text = secret_text(secret, SECRET_TOKEN_KEY)
        except ValueError as exc:
            problem(str(exc))
            return frozenset()
        tokens = parse_tokens(text)
        problem(None if tokens else f"key {SECRET_TOKEN_KEY!r} is empty")
        return tokens

    return provide


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header (scheme case-insensitive)."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token


def token_valid(candidate: str | None, tokens: Iterable[str]) -> bool:
    """Constant-time check of candidate against every valid token.

    Both sides are hashed first so that neither the content nor the length of a
    valid token shows in the timing, and every token is compared (no early exit).
    """
    if candidate is None:
        return False
    want = hashlib.sha256(candidate.encode()).digest()
    ok = False
    for token in tokens:
        ok |= hmac.compare_digest(want, hashlib.sha256(token.encode()).digest())
    return ok


def peer_common_name(cert: Mapping[str, Any] | None) -> str | None:
    """The CN of a verified peer certificate (`SSLObject.getpeercert()`), if any."""
    if not cert:
        return None
    for rdn in cert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return None


def server_ssl_context(tls: TLSConfig) -> ssl.SSLContext:
    """The wss context from websocket.tls; errors name the config key, not a traceback."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if tls.clientCAFile:
        try:
            ctx.load_verify_locations(cafile=tls.clientCAFile)
        except (ssl.SSLError, OSError) as exc:
            raise ConfigError(
                f"websocket.tls.clientCAFile: cannot load {tls.clientCAFile}: {exc}"
            ) from None
        ctx.verify_mode = ssl.CERT_REQUIRED
    try:
        ctx.load_cert_chain(certfile=tls.certFile, keyfile=tls.keyFile)
    except FileNotFoundError as exc:
        raise ConfigError(
            f"websocket.tls: file not found: {exc.filename or tls.certFile}"
        ) from None
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(
            f"websocket.tls.certFile/keyFile: cannot load {tls.certFile} and {tls.keyFile}: {exc}"
        ) from None
    return ctx
