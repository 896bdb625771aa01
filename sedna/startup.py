"""Start-up failures phrased for the operator: the gm.yaml key, the address, the reason.

A port already taken or a token that cannot be read are operator errors, not crashes:
the CLI turns a `StartupError` into one line on stderr and exit status 2.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator

from sedna.runtime.config import WebsocketConfig


class StartupError(Exception):
    """The manager cannot start; the message is for the operator."""


def _os_error(exc: BaseException) -> OSError | None:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError):
            return seen
        seen = seen.__cause__
    return None


@contextlib.contextmanager
def listen_errors(key: str, address: str, port: int) -> Iterator[None]:
    """Turn a failed bind of `key` into `key: cannot listen on address:port: reason`."""
    try:
        yield
    except (OSError, RuntimeError) as exc:
        os_error = _os_error(exc)
        if os_error is None:
            raise
        reason = os_error.strerror or str(os_error)
        raise StartupError(
            f"{key}: cannot listen on {address}:{port}: {reason} (set {key}: 0 to pick a free port)"
        ) from None


def token_readiness(
    ws: WebsocketConfig, tokens: Callable[[], Iterable[str]]
) -> Callable[[], tuple[bool, str]]:
    """A readiness check that fails while no LC token can be read.

    Without it the GM says ready while it refuses every LC with 401, and the Service
    sends LCs to a GM that cannot take them.
    """
    if ws.tokenFile:
        source = f"websocket.tokenFile {ws.tokenFile}"
    else:
        source = f"websocket.tokenSecret {ws.tokenSecret} (Secret missing or without key 'token')"

    def check() -> tuple[bool, str]:
        if any(True for _ in tokens()):
            return True, ""
        return False, f"no LC token in {source}: every LC is refused"

    return check
