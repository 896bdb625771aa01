"""Restricted tokens: a client limited to what an authorizer allows, denied as kube denies.

The server's own tokens are cluster-admin. A restricted token stands for a principal
with RBAC (a GM's service account, say): its resource requests are put to its
authorizer, and a refusal is kube-apiserver's 403 Forbidden with the same message, so
code under test meets the error it would meet on a cluster. Discovery and the public
probes stay open to it, as kube's `system:discovery` role leaves them.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass

from sedna.runtime.messaging.auth import token_valid

from .errors import APIError

__all__ = ["AccessAttributes", "Authorizer", "RestrictedTokens", "forbidden"]


@dataclass(frozen=True)
class AccessAttributes:
    """One resource request as RBAC sees it; `resource` may name a subresource."""

    verb: str
    group: str
    resource: str
    namespace: str | None
    name: str | None = None

    def __str__(self) -> str:
        where = f"in namespace {self.namespace}" if self.namespace else "cluster-wide"
        return f"{self.verb} {self.group or 'core'}/{self.resource} {where}"


Authorizer = Callable[[AccessAttributes], bool]


def forbidden(user: str, attrs: AccessAttributes) -> APIError:
    """kube-apiserver's RBAC refusal, message and details alike."""
    base = attrs.resource.split("/", 1)[0]
    qualified = f"{base}.{attrs.group}" if attrs.group else base
    subject = f'{qualified} "{attrs.name}"' if attrs.name else qualified
    scope = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    return APIError(
        403,
        "Forbidden",
        f'{subject} is forbidden: User "{user}" cannot {attrs.verb} resource '
        f'"{attrs.resource}" in API group "{attrs.group}" {scope}',
        name=attrs.name,
        group=attrs.group,
        kind=base,
    )


class RestrictedTokens:
    """Tokens issued for one principal each, with the authorizer that limits it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_token: dict[str, tuple[str, Authorizer]] = {}

    def issue(self, user: str, authorizer: Authorizer) -> str:
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._by_token[token] = (user, authorizer)
        return token

    def revoke(self, token: str) -> None:
        with self._lock:
            self._by_token.pop(token, None)

    def tokens(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._by_token)

    def check(self, authorization: str | None, attrs: AccessAttributes) -> None:
        """Raise 403 when the request's token is restricted and its authorizer refuses."""
        with self._lock:
            if not self._by_token:
                return
            entries = list(self._by_token.items())
        _, _, candidate = (authorization or "").strip().partition(" ")
        candidate = candidate.strip()
        for token, (user, authorizer) in entries:
            if token_valid(candidate, (token,)):
                if not authorizer(attrs):
                    raise forbidden(user, attrs)
                return
