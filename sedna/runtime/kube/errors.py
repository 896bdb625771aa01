"""Typed API errors built from kube-apiserver's ``Status`` bodies.

Controllers branch on *kinds* of failure (gone, conflict, already there), so each
kind gets a class; the status code, reason and message of the server's ``Status``
stay available for logs and events. ``kubernetes.client.ApiException`` never leaks
out of this package: callers need not know how the bytes travelled.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "MethodNotAllowed",
    "NotFound",
    "ReadTimeout",
    "ServerError",
    "TooManyRequests",
    "TransportError",
    "Unauthorized",
    "error_from_status",
]


class ApiError(Exception):
    """A failed API call; ``status`` 0 means no HTTP answer was received."""

    def __init__(
        self,
        status: int,
        reason: str = "",
        message: str = "",
        body: Mapping[str, Any] | None = None,
    ) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.body: dict[str, Any] = dict(body) if body else {}
        super().__init__(f"{status} {reason}: {message}" if message else f"{status} {reason}")


class BadRequest(ApiError):
    """HTTP 400."""


class Unauthorized(ApiError):
    """HTTP 401."""


class Forbidden(ApiError):
    """HTTP 403."""


class NotFound(ApiError):
    """HTTP 404."""


class MethodNotAllowed(ApiError):
    """HTTP 405."""


class Conflict(ApiError):
    """HTTP 409: a stale resourceVersion on update (retry with a fresh read)."""


class AlreadyExists(Conflict):
    """HTTP 409 with reason ``AlreadyExists``: a create hit an existing name."""


class Gone(ApiError):
    """HTTP 410: the requested resourceVersion is too old; relist."""


class Invalid(ApiError):
    """HTTP 422: the object failed validation."""


class TooManyRequests(ApiError):
    """HTTP 429: back off and retry."""


class ServerError(ApiError):
    """HTTP 5xx."""


class TransportError(ApiError):
    """No HTTP answer: connection refused or reset, TLS failure, broken stream."""


class ReadTimeout(TransportError):
    """The server sent nothing within the read timeout (a stuck or silent watch)."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
}


def error_from_status(
    status: int, body: Mapping[str, Any] | None, fallback_reason: str = ""
) -> ApiError:
    """Build the typed error for an HTTP status and a (possibly absent) ``Status`` body.

    Watch ``ERROR`` events carry a ``Status`` whose ``code`` is the real status
    (410 for an expired resourceVersion), so a code in the body wins over ``status``.
    """
    body = body if isinstance(body, Mapping) else None
    reason = fallback_reason
    message = ""
    if body is not None:
        code = body.get("code")
        if isinstance(code, int) and code > 0:
            status = code
        reason = str(body.get("reason") or reason)
        message = str(body.get("message") or "")
    cls: type[ApiError]
    if status == 409 and reason == "AlreadyExists":
        cls = AlreadyExists
    elif status in _BY_STATUS:
        cls = _BY_STATUS[status]
    elif status >= 500:
        cls = ServerError
    else:
        cls = ApiError
    return cls(status, reason, message, body)
