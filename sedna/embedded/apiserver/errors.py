"""Kubernetes ``Status`` errors.

Clients (the official python client, kubectl, client-go) decide what to do from the
``reason`` and ``code`` of a ``Status`` body, so every failure path raises one of these
instead of returning ad-hoc text.
"""

from __future__ import annotations

from typing import Any


class APIError(Exception):
    """A failure that is sent to the client as a ``Status`` object."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        name: str | None = None,
        group: str | None = None,
        kind: str | None = None,
        causes: list[dict[str, str]] | None = None,
        list_meta: dict[str, Any] | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.name = name
        self.group = group
        self.kind = kind
        self.causes = causes
        # a Status is a list-like object: a 410 for a list hands a fresh continue here
        self.list_meta = list_meta
        # seconds: details.retryAfterSeconds and the Retry-After header (429, 503)
        self.retry_after = retry_after

    def status(self) -> dict[str, Any]:
        """The ``Status`` body, shaped as kube-apiserver shapes it."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": dict(self.list_meta or {}),
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        details: dict[str, Any] = {}
        if self.name is not None:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        if self.kind is not None:
            details["kind"] = self.kind
        if self.causes:
            details["causes"] = self.causes
        if self.retry_after is not None:
            details["retryAfterSeconds"] = self.retry_after
        if details:
            body["details"] = details
        return body


def not_found(plural: str, name: str, group: str = "") -> APIError:
    """404 for a missing object; the message names resource and object like kube does."""
    res = f"{plural}.{group}" if group else plural
    return APIError(
        404, "NotFound", f'{res} "{name}" not found', name=name, group=group, kind=plural
    )


def already_exists(plural: str, name: str, group: str = "") -> APIError:
    """409 AlreadyExists on create of an existing name."""
    res = f"{plural}.{group}" if group else plural
    return APIError(
        409, "AlreadyExists", f'{res} "{name}" already exists', name=name, group=group, kind=plural
    )


def conflict(plural: str, name: str, group: str = "") -> APIError:
    """409 Conflict on a stale resourceVersion (optimistic concurrency)."""
    res = f"{plural}.{group}" if group else plural
    return APIError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {res} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again",
        name=name,
        group=group,
        kind=plural,
    )


def invalid(kind: str, name: str, field: str, detail: str, group: str = "") -> APIError:
    """422 Invalid naming the offending field, as kube's field validation does."""
    return APIError(
        422,
        "Invalid",
        f'{kind} "{name}" is invalid: {field}: {detail}',
        name=name,
        group=group,
        kind=kind,
        causes=[{"reason": "FieldValueInvalid", "message": detail, "field": field}],
    )


def bad_request(message: str) -> APIError:
    """400 for malformed input (bad JSON, bad selector, mismatched namespace)."""
    return APIError(400, "BadRequest", message)


def gone(message: str) -> APIError:
    """410 for a watch or list from a resourceVersion older than the kept history."""
    return APIError(410, "Expired", message)


def continue_expired(token: str) -> APIError:
    """410 for a continue token whose snapshot is gone, with kube's words.

    ``token`` goes on from the same key at the current version, as kube-apiserver
    offers: the client may take an inconsistent remainder or start over.
    """
    return APIError(
        410,
        "Expired",
        "The provided continue parameter is too old to display a consistent list result. "
        "You can start a new list without the continue parameter, or use the continue "
        "token in this response to retrieve the remainder of the results. Continuing with "
        "the provided token results in an inconsistent list - objects that were created, "
        "modified, or deleted between the time the first chunk was returned and now may "
        "show up in the list.",
        list_meta={"continue": token},
    )
