"""HTTP routing: one catch-all aiohttp handler that parses kube's URL grammar.

A single handler with hand-written path parsing keeps the request path short (no
router regex per resource) and lets CRD kinds appear and disappear at runtime.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import orjson
from aiohttp import web

from sedna.runtime.log_safety import clip

from . import (
    bodies,
    discovery,
    errors,
    logs,
    metadata_only,
    negotiation,
    pagination,
    protobuf,
    readyz,
    schema_validation,
    server_metrics,
    tables,
    watch_limits,
)
from .authorization import AccessAttributes
from .dryrun import dry_run
from .errors import APIError
from .negotiation import Target
from .patches import APPLY_PATCH, JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH
from .pool import off_loop
from .resources import CRD_KEY, POD_KEY, ResourceType
from .selectors import combine, parse_field_selector, parse_label_selector
from .watch import Watcher, translate
from .watch_queue import EventQueue
from .writes import Writes, Written

# kube-apiserver answers these to anyone (system:public-info-viewer): probes carry no token.
PUBLIC_PATHS = frozenset(("/healthz", "/livez", "/readyz", "/version"))

if TYPE_CHECKING:
    from . import APIServer

JSON_HEADERS = {"Content-Type": "application/json"}
# kube's cacher: bookmarks about once a minute, and this long before a watch's deadline
DEFAULT_BOOKMARK_FREQUENCY = 60.0
PRE_TIMEOUT_BOOKMARK = 2.0
_METHOD_VERB = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, headers=JSON_HEADERS)


def _json_written(written: Written, status: int = 200) -> web.Response:
    """A write's answer, with kube's warnings for the unknown fields it pruned."""
    raw = written.raw if written.raw is not None else orjson.dumps(written.obj)
    resp = web.Response(body=raw, status=status, headers=JSON_HEADERS)
    for warning in schema_validation.pruned_warnings():
        resp.headers.add("Warning", warning)
    return resp


def _error(err: APIError) -> web.Response:
    resp = _json(err.status(), err.code)
    if err.retry_after is not None:
        resp.headers["Retry-After"] = str(err.retry_after)
    return resp


_FAULT_REASONS = {
    409: "Conflict",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
    404: "NotFound",
}


class Handlers:
    """Request dispatch over the server's operations, hub and faults."""

    def __init__(self, server: APIServer) -> None:
        self.srv = server
        self.ops = server.ops
        self.writes = Writes(server.ops)
        self.registry = server.registry
        self.hub = server.hub
        self.faults = server.faults
        self.static: dict[str, Callable[[web.Request], Any]] = {
            "/version": lambda r: discovery.VERSION_INFO,
            "/healthz": lambda r: None,
            "/readyz": lambda r: None,
            "/livez": lambda r: None,
            "/api": lambda r: discovery.api_versions(f"{self.srv.host}:{self.srv.port}"),
            "/apis": lambda r: discovery.api_groups(self.registry),
            "/openapi/v2": lambda r: discovery.openapi_v2(self.registry),
            "/openapi/v3": lambda r: discovery.openapi_v3_index(self.registry),
        }

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Entry point for every request."""
        try:
            if request.path not in PUBLIC_PATHS and not self.srv.authenticated(
                request.headers.get("Authorization")
            ):
                raise APIError(401, "Unauthorized", "Unauthorized")
            return await self._handle(request)
        except APIError as err:
            return _error(err)
        except asyncio.CancelledError:
            raise
        except ConnectionResetError:
            # the peer went away mid-request (a slow body cut, a reset): nothing to answer,
            # and not worth a traceback in aiohttp's log
            request.protocol.force_close()
            return web.Response(status=400)
        except Exception as exc:  # a server bug must still answer with a Status
            from loguru import logger

            logger.exception(
                "embedded apiserver: internal error on {} {}",
                clip(request.method),
                clip(request.path, 200),
            )
            return _error(APIError(500, "InternalError", f"Internal error occurred: {exc!r}"))

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        if len(path) > 1 and path.endswith("/"):
            path = path[:-1]
        if path == "/openapi/v2" and "protobuf" in request.headers.get("Accept", ""):
            return web.Response(
                body=discovery.openapi_v2_protobuf(self.registry),
                content_type="application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
            )
        if path == "/readyz" and request.method == "GET":
            code, text = readyz.readyz(self.ops.store.health, "verbose" in request.query)
            return web.Response(text=text, status=code, content_type="text/plain")
        if path == "/metrics" and request.method == "GET":
            text = server_metrics.render(self.srv.watch_limits, self.ops.store.health)
            return web.Response(
                body=text.encode(), headers={"Content-Type": server_metrics.CONTENT_TYPE}
            )
        static = self.static.get(path)
        if static is not None:
            if request.method != "GET":
                raise APIError(
                    405,
                    "MethodNotAllowed",
                    "the server does not allow this method on the requested resource",
                )
            body = static(request)
            if body is None:
                return web.Response(text="ok", content_type="text/plain")
            return _json(body)
        segs = [unquote(s) for s in path.strip("/").split("/")]
        if segs[0] == "openapi" and len(segs) > 2 and segs[1] == "v3":
            return self._openapi_gv(segs[2:])
        if segs[0] == "api" and len(segs) >= 2:
            group, version, rest = "", segs[1], segs[2:]
        elif segs[0] == "apis" and len(segs) >= 3:
            group, version, rest = segs[1], segs[2], segs[3:]
        elif segs[0] == "apis" and len(segs) == 2:
            doc = discovery.api_group(self.registry, segs[1])
            if doc is None:
                raise _page_not_found()
            return _json(doc)
        else:
            raise _page_not_found()
        if not rest:
            doc = discovery.resource_list(self.registry, group, version)
            if doc is None:
                raise _page_not_found()
            return _json(doc)
        return await self._resource(request, group, version, rest)

    def _authorize(self, request: web.Request, attrs: AccessAttributes) -> None:
        self.srv.restricted.check(request.headers.get("Authorization"), attrs)

    def _openapi_gv(self, segs: list[str]) -> web.Response:
        if segs[0] == "api" and len(segs) == 2:
            doc = discovery.openapi_v3_doc(self.registry, "", segs[1])
        elif segs[0] == "apis" and len(segs) == 3:
            doc = discovery.openapi_v3_doc(self.registry, segs[1], segs[2])
        else:
            doc = None
        if doc is None:
            raise _page_not_found()
        return _json(doc)

    async def _resource(
        self, request: web.Request, group: str, version: str, rest: list[str]
    ) -> web.StreamResponse:
        watch_path = rest[0] == "watch"
        if watch_path:
            rest = rest[1:]
        ns: str | None = None
        if (
            len(rest) >= 3
            and rest[0] == "namespaces"
            and not (len(rest) == 3 and rest[2] in ("status", "finalize"))
        ):
            ns, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise _page_not_found()
        plural = rest[0]
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        rt = self.registry.get(group, version, plural)
        if rt is None or (ns is not None and not rt.namespaced):
            raise _page_not_found()
        if sub == "log" and rt.key == POD_KEY and name is not None and ns is not None:
            if request.method != "GET":
                raise APIError(
                    405, "MethodNotAllowed", "the server does not allow this method on pods/log"
                )
            self._authorize(request, AccessAttributes("get", group, "pods/log", ns, name))
            await self._faults("get", "pods/log")
            pod = self.ops.get(rt, ns, name)
            return await logs.serve_log(
                request, pod, self.srv.pod_logs, lambda: self.ops.store.get(POD_KEY, ns, name)
            )
        if (
            sub is not None
            and not (sub == "status" and rt.status_subresource)
            and not (sub == "finalize" and plural == "namespaces")
        ):
            raise _page_not_found()
        if sub == "finalize":
            sub = None
        query = request.query
        method = request.method
        watch = watch_path or query.get("watch") in ("true", "1")
        if method == "GET":
            verb = "get" if name else ("watch" if watch else "list")
        elif method == "DELETE" and not name:
            verb = "deletecollection"
        else:
            verb = _METHOD_VERB.get(method, "")
        if not verb:
            raise APIError(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            )
        resource = plural if sub is None else f"{plural}/{sub}"
        self.srv.requests.record(request.headers.get("User-Agent", ""), verb, group, resource, ns)
        self._authorize(request, AccessAttributes(verb, group, resource, ns, name))
        await self._faults(verb, resource)
        target: Target | None = None
        if verb in ("get", "list", "watch"):
            target = negotiation.negotiate(request.headers.get("Accept", ""))
            if target is not None and target.kind != negotiation.TABLE:
                metadata_only.check(target, verb, rt)
        if verb == "get":
            assert name is not None
            return self._read(rt, self.ops.get(rt, ns, name), target, query)
        if verb in ("list", "watch"):
            if name:
                raise _page_not_found()
            matcher = combine(
                parse_label_selector(query.get("labelSelector")),
                parse_field_selector(query.get("fieldSelector"), rt.kind),
            )
            if verb == "watch":
                return await self._watch(request, rt, ns, matcher, target)
            limit, cont = pagination.list_options(query)
            listed = self.ops.list(rt, ns, matcher, limit=limit, cont=cont)
            return self._read(rt, listed, target, query)
        if verb == "create":
            if name:
                raise APIError(
                    405,
                    "MethodNotAllowed",
                    "the server does not allow this method on the requested resource",
                )
            if rt.namespaced and ns is None:
                raise _page_not_found()
            dry = dry_run(verb, query.getall("dryRun", []))
            body, size = await _body(request)
            created = await self.writes.create(
                rt, ns, body, size, _field_validation(request), dry_run=dry
            )
            self._faults_after_commit(verb, resource)
            return _json_written(created, 201)
        if rt.namespaced and ns is None:
            raise _page_not_found()
        if verb == "deletecollection":
            return await self._delete_collection(request, rt, ns)
        if name is None:
            raise APIError(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            )
        if verb == "update":
            dry = dry_run(verb, query.getall("dryRun", []))
            body, size = await _body(request)
            updated = await self.writes.update(
                rt, ns, name, body, size, sub, _field_validation(request), dry_run=dry
            )
            self._faults_after_commit(verb, resource)
            return _json_written(updated)
        if verb == "patch":
            patched = await self._patch(request, rt, ns, name, sub)
            self._faults_after_commit(verb, resource)
            return _json_written(patched)
        opts = await _delete_options(request)
        dry = dry_run(verb, request.query.getall("dryRun", []), opts)
        code, out = self.ops.delete(rt, ns, name, opts, dry_run=dry)
        self._faults_after_commit(verb, resource)
        return _json(out, code)

    def _read(
        self,
        rt: ResourceType,
        result: dict[str, Any],
        target: Target | None,
        query: Mapping[str, str],
    ) -> web.Response:
        """A get or list result as negotiated: itself, a Table or its metadata only."""
        if target is None:
            return _json(result)
        if target.kind == negotiation.TABLE:
            return self._table(rt, result, target.version, query)
        return web.Response(
            body=orjson.dumps(metadata_only.convert(target, result)),
            headers={"Content-Type": target.content_type()},
        )

    def _table(
        self, rt: ResourceType, result: dict[str, Any], version: str, query: Mapping[str, str]
    ) -> web.Response:
        """Server-side printing for ``kubectl get``: a Table instead of the object or list."""
        crd = self.ops.store.get(CRD_KEY, "", rt.qualified) if rt.custom else None
        include = tables.include_object(query)
        body = tables.to_table(rt, result, version=version, include=include, crd=crd)
        return web.Response(
            body=orjson.dumps(body), headers={"Content-Type": tables.content_type(version)}
        )

    def _faults_after_commit(self, verb: str, resource: str) -> None:
        """An error for a write that has happened (see ``FaultInjector.fail``)."""
        code = self.faults.check(verb, resource, after_commit=True)
        if code is not None:
            reason = _FAULT_REASONS.get(code, "InternalError")
            message = f"injected fault after commit: {reason} ({verb} {resource})"
            raise APIError(code, reason, message)

    async def _faults(self, verb: str, resource: str) -> None:
        f = self.faults
        if f.compact_requested:
            f.compact_requested = False
            self.hub.compact(self.ops.store.rv)
        delay = f.delay_for(verb)
        if delay:
            await asyncio.sleep(delay)
        code = f.check(verb, resource)
        if code is not None:
            reason = _FAULT_REASONS.get(code, "InternalError")
            raise APIError(code, reason, f"injected fault: {reason} ({verb} {resource})")

    async def _patch(
        self, request: web.Request, rt: ResourceType, ns: str | None, name: str, sub: str | None
    ) -> Written:
        dry = dry_run("patch", request.query.getall("dryRun", []))
        ctype = request.headers.get("Content-Type", "").split(";")[0].strip()
        accepted = [JSON_PATCH, MERGE_PATCH] + ([] if rt.custom else [STRATEGIC_PATCH])
        if ctype not in accepted or ctype == APPLY_PATCH:
            raise APIError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format - accepted media types include: "
                f"{', '.join(accepted)}",
            )
        patch, _ = await _body(request)
        # applied and checked off the loop (bounded work, see patch_budget and writes)
        return await self.writes.patch(
            rt, ns, name, sub, ctype, patch, _field_validation(request), dry_run=dry
        )

    async def _delete_collection(
        self, request: web.Request, rt: ResourceType, ns: str | None
    ) -> web.Response:
        matcher = combine(
            parse_label_selector(request.query.get("labelSelector")),
            parse_field_selector(request.query.get("fieldSelector"), rt.kind),
        )
        opts = await _delete_options(request)
        dry = dry_run("deletecollection", request.query.getall("dryRun", []), opts)
        listed = self.ops.list(rt, ns, matcher)
        items = []
        for obj in listed["items"]:
            m = obj["metadata"]
            with contextlib.suppress(APIError):
                items.append(
                    self.ops.delete(rt, m.get("namespace"), m["name"], opts, dry_run=dry)[1]
                )
        listed["items"] = [o for o in items if o.get("kind") != "Status"]
        return _json(listed)

    def _event_encoder(
        self, request: web.Request, rt: ResourceType, target: Target | None
    ) -> Callable[[str, Any], bytes]:
        """How a watch writes its events: plain objects, metadata only, or one-row Tables.

        As kube-apiserver does, only the first Table carries the column definitions;
        kubectl reuses them for the rows that follow (``kubectl get -w``).
        """
        conv = rt.api_version
        if target is None:
            return lambda typ, item: _event_line(typ, item, conv)
        if target.kind != negotiation.TABLE:
            v = target.version
            return lambda typ, item: metadata_only.event_line(
                typ, item if isinstance(item, dict) else item.obj, v
            )
        version = target.version
        include = tables.include_object(request.query)
        crd = self.ops.store.get(CRD_KEY, "", rt.qualified) if rt.custom else None
        first = [True]

        def encode(typ: str, item: Any) -> bytes:
            obj = item if isinstance(item, dict) else item.obj
            if obj.get("apiVersion") != conv:
                obj = dict(obj, apiVersion=conv)
            table = tables.to_table(rt, obj, version=version, include=include, crd=crd)
            if not first[0]:
                table["columnDefinitions"] = []
            first[0] = False
            return orjson.dumps({"type": typ, "object": table}) + b"\n"

        return encode

    async def _watch(
        self,
        request: web.Request,
        rt: ResourceType,
        ns: str | None,
        matcher: Any,
        target: Target | None,
    ) -> web.StreamResponse:
        q = request.query
        rv_s = q.get("resourceVersion") or ""
        timeout = _watch_timeout(q.get("timeoutSeconds"), self.srv.watch_timeout)
        bookmarks = q.get("allowWatchBookmarks") in ("true", "1")
        line = self._event_encoder(request, rt, target)
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        resp.enable_chunked_encoding()
        ns_filter = ns if rt.namespaced else None
        initial: list[tuple[str, Any]] = []
        store = self.ops.store
        if rv_s not in ("", "0"):
            try:
                rv = int(rv_s)
            except ValueError:
                raise errors.bad_request(f"invalid resourceVersion {rv_s!r}") from None
            if self.faults.take_gone() or self.hub.too_old(rv):
                await resp.prepare(request)
                oldest = self.hub.compacted_rv
                err = errors.gone(f"too old resource version: {rv} ({oldest})")
                await resp.write(orjson.dumps({"type": "ERROR", "object": err.status()}) + b"\n")
                await resp.write_eof()
                return resp
            for ev in self.hub.since(rt.key, rv):
                if ns_filter is not None and ev.namespace != ns_filter:
                    continue
                typ = translate(ev, matcher)
                if typ is not None:
                    initial.append((typ, ev))
        limits = self.srv.watch_limits
        client = watch_limits.client_key(request.headers.get("Authorization"), request.remote)
        limits.acquire(client)  # 429 over a cap, before anything is held
        queue = EventQueue(limits)
        w = Watcher(rt.key, ns_filter, matcher, queue)
        self.hub.subscribe(w)
        try:
            if rv_s in ("", "0"):
                for obj in self.ops.list(rt, ns, matcher)["items"]:
                    initial.append(("ADDED", obj))
            await resp.prepare(request)
            sent = 0
            limit = self.faults.watch_close_after
            buf = []
            for typ, item in initial:
                buf.append(line(typ, item))
                sent += 1
                if limit is not None and sent >= limit:
                    await resp.write(b"".join(buf))
                    return resp
            if buf:
                await resp.write(b"".join(buf))
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            frequency = self.srv.bookmark_frequency
            due = next_bookmark(loop.time(), deadline, frequency) if bookmarks else None
            while True:
                now = loop.time()
                if due is not None and now >= due and not queue.overflowed:
                    # (after an overflow a bookmark would skip the events dropped)
                    await resp.write(_bookmark(rt, store.rv, target))
                    due = next_bookmark(now, deadline, frequency)
                remaining = deadline - now
                if remaining <= 0:
                    break
                wait = remaining if due is None else min(remaining, max(0.0, due - now))
                try:
                    item2 = await asyncio.wait_for(w.queue.get(), wait)
                except TimeoutError:
                    continue
                if item2 is None:
                    break
                lines = [line(item2[0], item2[1])]
                sent += 1
                while not w.queue.empty() and (limit is None or sent < limit):
                    nxt = w.queue.get_nowait()
                    if nxt is None:
                        break
                    lines.append(line(nxt[0], nxt[1]))
                    sent += 1
                await resp.write(b"".join(lines))
                if limit is not None and sent >= limit:
                    return resp
        except (ConnectionResetError, ConnectionError):
            return resp
        finally:
            self.hub.unsubscribe(w)
            queue.drop()
            limits.release(client)
        with contextlib.suppress(ConnectionError):
            await resp.write_eof()
        return resp


def _watch_timeout(raw: str | None, default: float) -> float:
    """`timeoutSeconds` as kube reads it: an integer (so never `inf` nor `nan`, which
    would hold a watch open for ever); 0 or absent means the server's default."""
    if not raw:
        return default
    try:
        seconds = int(raw)
    except ValueError:
        raise errors.bad_request(
            f'invalid value for timeoutSeconds: strconv.ParseInt: parsing "{raw}": invalid syntax'
        ) from None
    return float(seconds) if seconds else default


def next_bookmark(now: float, deadline: float, frequency: float) -> float | None:
    """When a watch's next BOOKMARK is due, as kube's cacher schedules it.

    About every `frequency` (kube: a minute), and once shortly before the watch's
    deadline (2 s before), so a client resumes from a fresh resourceVersion when the
    server ends the watch; None when that moment has passed. A bookmark every idle
    second (what this server once sent) breaks client-go watches that cannot decode
    the object kind and makes them relist.
    """
    due = min(now + frequency, deadline - PRE_TIMEOUT_BOOKMARK)
    return None if due < now else due


def _event_line(typ: str, item: Any, api_version: str) -> bytes:
    if isinstance(item, dict):
        raw = orjson.dumps(item)
    else:
        obj = item.obj
        raw = (
            orjson.dumps(dict(obj, apiVersion=api_version))
            if obj.get("apiVersion") != api_version
            else item.raw()
        )
    return b'{"type":"' + typ.encode() + b'","object":' + raw + b"}\n"


def _bookmark(rt: ResourceType, rv: int, target: Target | None) -> bytes:
    if target is not None and target.kind == negotiation.PARTIAL:
        return metadata_only.bookmark_line(rv, target.version)
    # Table watches keep plain bookmarks, as they always did here.
    obj = {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": {"resourceVersion": str(rv)}}
    return orjson.dumps({"type": "BOOKMARK", "object": obj}) + b"\n"


def _page_not_found() -> APIError:
    return APIError(404, "NotFound", "the server could not find the requested resource")


async def _read_bounded(request: web.Request) -> bytes:
    """The raw body, or 413 above kube's 3 MiB (checked before reading when announced)."""
    length = request.content_length
    if length is not None and length > bodies.MAX_BODY_BYTES:
        raise bodies.too_large(length)
    try:
        async with asyncio.timeout(bodies.body_timeout(request)):
            return await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise bodies.too_large(bodies.MAX_BODY_BYTES + 1) from None
    except TimeoutError:
        raise bodies.cut_slow_body(request) from None


async def _body(request: web.Request) -> tuple[Any, int]:
    """The decoded body and its size in bytes."""
    ctype = request.headers.get("Content-Type", "")
    if "cbor" in ctype:
        # Like kube-apiserver with a serializer it lacks: 415, so clients retry as JSON.
        raise APIError(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: "
            "application/json, application/yaml",
        )
    raw = await _read_bounded(request)
    if not raw:
        raise errors.bad_request("the request body is empty")
    if "protobuf" in ctype:
        # kubectl's imperative `create` of built-in kinds; other kinds get a 415 from there.
        return bodies.check_depth(protobuf.decode(raw)), len(raw)
    try:
        if len(raw) > bodies.LARGE_BYTES:
            # decoding and the depth walk of MBs take tens of ms: off the loop as well
            return await off_loop(bodies.load_json, raw), len(raw)
        return bodies.load_json(raw), len(raw)
    except orjson.JSONDecodeError:
        if "yaml" in ctype:
            # pure-Python parsing (to refuse aliases) takes a while for MBs: off the loop
            loop = asyncio.get_running_loop()
            value = await loop.run_in_executor(None, bodies.load_yaml, raw)
            return bodies.check_depth(value), len(raw)
        raise errors.bad_request(
            "the body of the request was in an unknown format - invalid JSON"
        ) from None


async def _delete_options(request: web.Request) -> Mapping[str, Any]:
    opts: dict[str, Any] = {}
    raw = await _read_bounded(request)
    if raw:
        try:
            body = bodies.load_json(raw)
        except orjson.JSONDecodeError:
            raise errors.bad_request("invalid DeleteOptions body") from None
        if isinstance(body, dict):
            opts.update(body)
    q = request.query
    if "propagationPolicy" in q:
        opts["propagationPolicy"] = q["propagationPolicy"]
    if "orphanDependents" in q:
        opts["orphanDependents"] = q["orphanDependents"] == "true"
    return opts


def _field_validation(request: web.Request) -> str | None:
    """kube's `fieldValidation` (Strict, Warn, Ignore): what an unknown field costs."""
    return request.query.get("fieldValidation")
