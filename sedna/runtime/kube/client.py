"""Raw JSON access to the API through the official client's transport.

The generated ``*Api`` classes turn every response into model objects, which is
most of the client's CPU cost (kubernetes-client/python #1867, #2284, #1231). We
keep the official client for what it does well (configuration, auth and token
refresh, TLS, the urllib3 pool) and stop before deserialization:
``param_serialize`` builds the request, ``call_api`` returns the unread urllib3
response, and the bytes are parsed with orjson into plain dicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import kubernetes.client
import orjson
import urllib3
from kubernetes.client import rest
from kubernetes.client.exceptions import ApiException

from .errors import ApiError, ReadTimeout, TransportError, error_from_status
from .metadata import LIST_ACCEPT, OBJECT_ACCEPT, as_partial, as_partial_list
from .resources import Resource
from .watch import WatchStream

__all__ = [
    "DEFAULT_POOL_SIZE",
    "GM_USER_AGENT",
    "KubeClient",
    "PatchType",
    "ResourceClient",
    "ensure_pool_size",
]

PatchType = Literal["merge", "json", "strategic"]

_PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}

# Each informer holds one connection for its watch and every controller worker
# may hold one more; the client's default (cpu_count * 5) makes urllib3 open and
# throw away surplus connections with a warning on small machines.
DEFAULT_POOL_SIZE = 32

Timeout = float | tuple[float, float]


def _gm_user_agent() -> str:
    try:
        from importlib import metadata

        return "sedna-gm/" + metadata.version("sedna-gm")
    except Exception:  # not installed (a source tree on sys.path)
        return "sedna-gm/0.0.0+unknown"


GM_USER_AGENT = _gm_user_agent()
"""The User-Agent of the GM's own requests, so audit logs (and the tests' RBAC check)
tell them from other clients'."""


def ensure_pool_size(api_client: kubernetes.client.ApiClient, size: int) -> None:
    """Grow the urllib3 pool of ``api_client`` to at least ``size`` connections.

    The pool is built when the ``ApiClient`` is, so a larger size means a new
    ``RESTClientObject``; connections of the old pool are simply dropped.
    """
    cfg = api_client.configuration
    current = cfg.connection_pool_maxsize or 0
    if current >= size:
        return
    cfg.connection_pool_maxsize = size
    api_client.rest_client = rest.RESTClientObject(cfg)


class KubeClient:
    """Entry point: one per ``ApiClient``, thread-safe, cheap ``resource()`` views."""

    def __init__(
        self,
        api_client: kubernetes.client.ApiClient,
        *,
        request_timeout: Timeout = (10.0, 60.0),
        pool_size: int | None = DEFAULT_POOL_SIZE,
        user_agent: str | None = None,
    ) -> None:
        self.api_client = api_client
        self.request_timeout = request_timeout
        if user_agent:
            api_client.user_agent = user_agent
        if pool_size:
            ensure_pool_size(api_client, pool_size)
        self._auth = ["BearerToken"]
        self._direct: tuple[Any, str, Any] | None = None  # (manager, origin, its pool)

    def resource(self, res: Resource) -> ResourceClient:
        """Return the client for one resource (cheap; no caching needed)."""
        return ResourceClient(self, res)

    # -- transport ---------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, Any]] | None = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: Timeout | None = None,
        accept: str | None = None,
    ) -> dict[str, Any]:
        """Send one request and return the parsed JSON body; errors raise ``ApiError``.

        ``accept`` replaces the default ``application/json`` Accept header (e.g. to ask
        for a ``PartialObjectMetadata`` conversion, see ``metadata``).
        """
        resp = self._send(
            method,
            path,
            query=query,
            body=body,
            content_type=content_type,
            timeout=timeout,
            accept=accept,
        )
        try:
            data = resp.response.data
        except urllib3.exceptions.ReadTimeoutError as exc:
            resp.response.close()
            raise ReadTimeout(0, "ReadTimeout", f"{method} {path}: {exc}") from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            resp.response.close()
            raise TransportError(0, type(exc).__name__, f"{method} {path}: {exc}") from exc
        resp.response.release_conn()
        status = resp.status
        parsed = _parse(data)
        if not 200 <= status <= 299:
            raise error_from_status(status, parsed, resp.reason or "")
        if not isinstance(parsed, dict):
            raise ApiError(status, "BadResponse", f"{method} {path}: response is not an object")
        return parsed

    def open_watch(
        self,
        path: str,
        *,
        query: Sequence[tuple[str, Any]],
        read_timeout: float | None,
        what: str,
        metadata_only: bool = False,
    ) -> WatchStream:
        """Start a streaming GET; an HTTP error status raises before any event.

        ``metadata_only`` asks for ``PartialObjectMetadata`` event objects (``metadata``).
        """
        connect = self._connect_timeout()
        timeout: Timeout | None = (connect, read_timeout) if read_timeout else None
        accept = OBJECT_ACCEPT if metadata_only else None
        resp = self._send("GET", path, query=query, timeout=timeout, stream=True, accept=accept)
        if not 200 <= resp.status <= 299:
            try:
                data = resp.response.data
            except (urllib3.exceptions.HTTPError, OSError):
                data = b""
            raise error_from_status(resp.status, _parse(data), resp.reason or "")
        return WatchStream(resp.response, what, metadata_only=metadata_only)

    def _connect_timeout(self) -> float:
        t = self.request_timeout
        return t[0] if isinstance(t, tuple) else t

    def _send(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, Any]] | None = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: Timeout | None = None,
        stream: bool = False,
        accept: str | None = None,
    ) -> rest.RESTResponse:
        headers = {"Accept": accept or "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type or "application/json"
        # The body skips param_serialize (sanitize_for_serialization is a pure-Python
        # copy of every dict) and, encoded by orjson, the client's json.dumps too.
        method_, url, header_params, _, _ = self.api_client.param_serialize(
            method,
            path,
            query_params=list(query) if query else None,
            header_params=headers,
            auth_settings=self._auth,
        )
        if timeout is None and not stream:
            timeout = self.request_timeout
        try:
            raw = _encode(body) if body is not None else None
            if raw is not None and (manager := _manager_of(self.api_client)) is not None:
                resp = rest.RESTResponse(
                    self._write(manager, method_, url, raw, header_params, timeout)
                )
            else:
                resp = self.api_client.call_api(
                    method_, url, header_params=header_params, body=body, _request_timeout=timeout
                )
        except ApiException as exc:
            # The client raises ApiException only for transport failures here
            # (status 0) or its own retry-after handling; keep our error types.
            if exc.status:
                raise error_from_status(
                    exc.status, _parse(exc.body or b""), exc.reason or ""
                ) from exc
            raise TransportError(0, "TransportError", f"{method} {path}: {exc.reason}") from exc
        except urllib3.exceptions.ReadTimeoutError as exc:
            raise ReadTimeout(0, "ReadTimeout", f"{method} {path}: {exc}") from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise TransportError(0, type(exc).__name__, f"{method} {path}: {exc}") from exc
        return resp

    def _write(
        self,
        manager: Any,
        method: str,
        url: str,
        body: bytes,
        headers: dict[str, str],
        timeout: Timeout | None,
    ) -> Any:
        """A request with an encoded body on the client's own urllib3 pool.

        A quarter of a write's CPU went to the PoolManager finding the same pool for
        the same host again (URL parse, pool key) on every request. For a plain
        ``PoolManager`` that pool is looked up once and used directly, with what the
        manager would pass it (no redirects, the pool's retries); proxies and custom
        managers keep the manager's own routing.
        """
        target = self._direct_pool(manager, url)
        kw: dict[str, Any] = {
            "body": body,
            "headers": headers,
            "timeout": _urllib3_timeout(timeout),
            "preload_content": False,
        }
        if target is not None:
            pool, uri = target
            try:
                return pool.urlopen(method, uri, assert_same_host=False, redirect=False, **kw)
            except urllib3.exceptions.ClosedPoolError:
                self._direct = None  # the manager dropped it (cleared, evicted): ask it
        return manager.request(method, url, **kw)

    def _direct_pool(self, manager: Any, url: str) -> tuple[Any, str] | None:
        """The manager's pool for `url`'s host and the request-uri to send, or None."""
        if type(manager) is not urllib3.PoolManager:
            return None
        cached = self._direct
        if cached is None or cached[0] is not manager or not _under(url, cached[1]):
            u = urllib3.util.parse_url(url)
            if not u.scheme or not u.host:
                return None
            origin = f"{u.scheme}://{u.netloc}"
            if not _under(url, origin):
                return None
            pool = manager.connection_from_host(u.host, port=u.port, scheme=u.scheme)
            cached = self._direct = (manager, origin, pool)
        return cached[2], url[len(cached[1]) :] or "/"


def _under(url: str, origin: str) -> bool:
    """Whether `url` is on `origin` (scheme://host:port), not on a longer port or host."""
    return url.startswith(origin) and url[len(origin) : len(origin) + 1] in ("", "/", "?")


# datetimes, dataclasses and subclasses of dict/str... raise instead of being encoded
# in orjson's own way; the client's json.dumps path then decides, as it always did.
_EXACT = (
    orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def _encode(body: Any) -> bytes | None:
    """The body as JSON bytes via orjson (~10x ``json.dumps``, which the client uses).

    None when orjson cannot encode it exactly (non-str keys, subclasses, datetimes):
    such a body takes the client's own path, as before.
    """
    try:
        return orjson.dumps(body, option=_EXACT)
    except (TypeError, orjson.JSONEncodeError):
        return None


def _manager_of(api_client: kubernetes.client.ApiClient) -> Any:
    """The urllib3 pool manager of the client's ``RESTClientObject``, or None for a
    custom one.

    ``RESTClientObject.request`` runs ``json.dumps`` on every JSON body; for bytes we
    already encoded, its write branch reduces to this manager's ``request``, which
    ``KubeClient._write`` sends on the manager's pool for the host (GETs, with their
    retry handling, still go through the client).
    """
    rest_client = getattr(api_client, "rest_client", None)
    if type(rest_client) is not rest.RESTClientObject:
        return None
    return getattr(rest_client, "pool_manager", None)


def _urllib3_timeout(timeout: Timeout | None) -> urllib3.Timeout | None:
    """The client's ``_request_timeout`` rule: a number is the total, a pair (connect, read)."""
    if not timeout:
        return None
    if isinstance(timeout, tuple):
        return urllib3.Timeout(connect=timeout[0], read=timeout[1])
    return urllib3.Timeout(total=timeout)


def _parse(data: bytes | str | None) -> Any:
    if not data:
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def _selectors(label_selector: str | None, field_selector: str | None) -> list[tuple[str, Any]]:
    q: list[tuple[str, Any]] = []
    if label_selector:
        q.append(("labelSelector", label_selector))
    if field_selector:
        q.append(("fieldSelector", field_selector))
    return q


class ResourceClient:
    """CRUD, patch and watch for one resource; dicts in, dicts out."""

    def __init__(self, client: KubeClient, res: Resource) -> None:
        self.client = client
        self.res = res

    def _ns(self, namespace: str | None) -> str | None:
        if self.res.namespaced:
            return namespace or None
        return None

    def get(
        self, namespace: str | None, name: str, *, metadata_only: bool = False
    ) -> dict[str, Any]:
        """GET one object; ``metadata_only`` gets it as ``PartialObjectMetadata``."""
        path = self.res.path(self._ns(namespace), name)
        if not metadata_only:
            return self.client.request("GET", path)
        return as_partial(self.client.request("GET", path, accept=OBJECT_ACCEPT))

    def list(
        self,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        metadata_only: bool = False,
    ) -> dict[str, Any]:
        """LIST; the result keeps the server's ``metadata.resourceVersion`` for a watch.

        ``metadata_only`` gets a ``PartialObjectMetadataList``: the list's metadata
        (resourceVersion, continue) and each item's ``metadata``, nothing else.
        """
        q = _selectors(label_selector, field_selector)
        if resource_version is not None:
            q.append(("resourceVersion", resource_version))
        if limit:
            q.append(("limit", limit))
        if continue_token:
            q.append(("continue", continue_token))
        path = self.res.path(self._ns(namespace))
        if not metadata_only:
            return self.client.request("GET", path, query=q)
        return as_partial_list(self.client.request("GET", path, query=q, accept=LIST_ACCEPT))

    def watch(
        self,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        timeout_seconds: int | None = None,
        allow_bookmarks: bool = True,
        label_selector: str | None = None,
        field_selector: str | None = None,
        read_timeout: float | None = None,
        metadata_only: bool = False,
    ) -> WatchStream:
        """Open a watch; ``read_timeout`` bounds the silence tolerated between bytes.

        ``timeout_seconds`` asks the server to end the stream cleanly, the read
        timeout catches connections that died without the server noticing.
        ``metadata_only`` makes every event's object (bookmarks included) a
        ``PartialObjectMetadata``; ERROR events keep their Status.
        """
        q: list[tuple[str, Any]] = [("watch", "true")]
        q += _selectors(label_selector, field_selector)
        if resource_version:
            q.append(("resourceVersion", resource_version))
        if timeout_seconds:
            q.append(("timeoutSeconds", int(timeout_seconds)))
        if allow_bookmarks:
            q.append(("allowWatchBookmarks", "true"))
        ns = self._ns(namespace)
        what = f"{self.res.group_resource} in {ns}" if ns else self.res.group_resource
        return self.client.open_watch(
            self.res.path(ns),
            query=q,
            read_timeout=read_timeout,
            what=what,
            metadata_only=metadata_only,
        )

    def create(self, namespace: str | None, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST; ``metadata.generateName`` without ``name`` lets the server pick the name."""
        return self.client.request(
            "POST", self.res.path(self._ns(namespace)), body=self._with_type(body)
        )

    def replace(self, namespace: str | None, name: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """PUT; ``metadata.resourceVersion`` in ``body`` makes it a compare-and-swap."""
        return self.client.request(
            "PUT", self.res.path(self._ns(namespace), name), body=self._with_type(body)
        )

    def replace_status(
        self, namespace: str | None, name: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        """PUT the status subresource (spec changes in ``body`` are ignored by the server)."""
        return self.client.request(
            "PUT", self.res.path(self._ns(namespace), name, "status"), body=self._with_type(body)
        )

    def patch(
        self,
        namespace: str | None,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """PATCH; ``json`` takes a list of RFC 6902 operations, the others a dict.

        Strategic merge is only understood for built-in kinds; CRDs reject it with 415.
        """
        try:
            content_type = _PATCH_CONTENT_TYPES[patch_type]
        except KeyError:
            raise ValueError(f"unknown patch type {patch_type!r}") from None
        if patch_type == "json" and not isinstance(patch, list):
            # The client would silently turn a non-list JSON patch into a strategic one.
            raise TypeError("a json patch is a list of operations")
        return self.client.request(
            "PATCH",
            self.res.path(self._ns(namespace), name, subresource),
            body=patch,
            content_type=content_type,
        )

    def delete(
        self,
        namespace: str | None,
        name: str,
        *,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """DELETE; returns the server's answer (the object, or a ``Status``)."""
        body: dict[str, Any] | None = None
        q: list[tuple[str, Any]] = []
        if propagation_policy or grace_period_seconds is not None or preconditions:
            body = {"kind": "DeleteOptions", "apiVersion": "v1"}
            if propagation_policy:
                body["propagationPolicy"] = propagation_policy
                q.append(("propagationPolicy", propagation_policy))
            if grace_period_seconds is not None:
                body["gracePeriodSeconds"] = grace_period_seconds
                q.append(("gracePeriodSeconds", grace_period_seconds))
            if preconditions:
                body["preconditions"] = dict(preconditions)
        return self.client.request(
            "DELETE", self.res.path(self._ns(namespace), name), query=q, body=body
        )

    def _with_type(self, body: Mapping[str, Any]) -> dict[str, Any]:
        # The server needs apiVersion/kind; filling them in spares every caller.
        out = dict(body)
        out.setdefault("apiVersion", self.res.api_version)
        out.setdefault("kind", self.res.kind)
        return out
