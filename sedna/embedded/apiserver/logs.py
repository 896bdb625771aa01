"""``GET pods/<name>/log``: what ``kubectl logs`` asks for.

kube-apiserver proxies this to the kubelet of the pod's node. This server reads the
files the embedded kubelet writes (``sedna.embedded.pod_logs``) from the directory it
was given; without one (the tests' server, which has no kubelet) the answer is 503,
so a client learns that logs are missing here rather than reading an empty log.

Parameters as kube validates them: ``container`` (required when the pod has several),
``tailLines`` (>= 0), ``limitBytes`` (>= 1), ``follow`` (the body streams until the
pod has finished, is deleted, or the client goes away: a gone client ends the stream at
the next poll, quietly, instead of when the pod is deleted, with a traceback).
``previous``, ``timestamps``,
``sinceSeconds`` and ``sinceTime`` need what only a real kubelet keeps (the previous
container's log, per-line times); asking for them is a 400 naming the parameter,
never a silently different answer.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.client_exceptions import ClientConnectionResetError

from sedna.embedded.pod_logs import log_path

from .errors import APIError, bad_request

FOLLOW_POLL_SECONDS = 0.2
_TERMINAL = ("Succeeded", "Failed")
_UNSUPPORTED = ("previous", "timestamps", "sinceSeconds", "sinceTime")
_CHUNK = 64 * 1024

Pod = Mapping[str, Any]


def _truthy(value: str | None) -> bool:
    return value in ("true", "1", "True")


def _int_param(query: Mapping[str, str], name: str, minimum: int) -> int | None:
    raw = query.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise bad_request(f'{name}: Invalid value: "{raw}": must be an integer') from None
    if value < minimum:
        raise bad_request(
            f"{name}: Invalid value: {value}: must be greater than or equal to {minimum}"
        )
    return value


def _names(pod: Pod, key: str) -> list[str]:
    spec = pod.get("spec") or {}
    return [str(c.get("name")) for c in spec.get(key) or [] if isinstance(c, Mapping)]


def _go(names: list[str]) -> str:
    """A list of names as Go's %v prints a []string (kube's messages do)."""
    return "[" + " ".join(names) + "]"


def _container(pod: Pod, wanted: str | None) -> str:
    """The container the request is about, chosen and checked as kube does."""
    name = pod["metadata"]["name"]
    containers, inits = _names(pod, "containers"), _names(pod, "initContainers")
    if not wanted:
        if len(containers) == 1:
            return containers[0]
        msg = f"a container name must be specified for pod {name}, choose one of: {_go(containers)}"
        if inits:
            msg += f" or one of the init containers: {_go(inits)}"
        raise bad_request(msg)
    if wanted not in containers and wanted not in inits:
        raise bad_request(f"container {wanted} is not valid for pod {name}")
    return wanted


def _waiting_reason(pod: Pod, container: str) -> str | None:
    """Why the container has not started yet, or None if it has (or has run)."""
    status = pod.get("status") or {}
    for key in ("containerStatuses", "initContainerStatuses"):
        for cs in status.get(key) or []:
            if isinstance(cs, Mapping) and cs.get("name") == container:
                state = cs.get("state") or {}
                if "waiting" in state:
                    return str((state.get("waiting") or {}).get("reason") or "PodInitializing")
                return None
    return "ContainerCreating"


def _tail(data: bytes, lines: int) -> bytes:
    if lines == 0:
        return b""
    parts = data.splitlines(keepends=True)
    return b"".join(parts[-lines:])


async def serve_log(
    request: web.Request,
    pod: Pod,
    log_dir: Path | None,
    current: Callable[[], Pod | None],
) -> web.StreamResponse:
    """The log of one container of ``pod``; ``current()`` re-reads the pod for ``follow``."""
    query = request.query
    for param in _UNSUPPORTED:
        if _truthy(query.get(param)) or (param.startswith("since") and query.get(param)):
            raise bad_request(f"{param}: not kept by the embedded kubelet's logs")
    tail_lines = _int_param(query, "tailLines", 0)
    limit_bytes = _int_param(query, "limitBytes", 1)
    follow = _truthy(query.get("follow"))
    meta = pod["metadata"]
    container = _container(pod, query.get("container"))
    if log_dir is None:
        raise APIError(
            503,
            "ServiceUnavailable",
            "pod logs are not available: this API server has no kubelet "
            "(the embedded GM serves them from <stateDir>/logs)",
        )
    if not (pod.get("spec") or {}).get("nodeName"):
        raise bad_request(f"pod {meta['name']} does not have a host assigned")
    try:
        path = log_path(log_dir, str(meta.get("namespace") or ""), str(meta["name"]), container)
    except ValueError as exc:
        raise bad_request(str(exc)) from None
    if not path.exists():
        reason = _waiting_reason(pod, container)
        if reason is not None:
            raise bad_request(
                f'container "{container}" in pod "{meta["name"]}" is waiting to start: {reason}'
            )
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        data = b""
    except OSError as exc:
        raise APIError(500, "InternalError", f"cannot read the log: {exc.strerror}") from None
    offset = len(data)
    if tail_lines is not None:
        data = _tail(data, tail_lines)
    budget = limit_bytes
    if budget is not None:
        data = data[:budget]
        budget -= len(data)
    if not follow:
        return web.Response(body=data, content_type="text/plain")

    resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
    await resp.prepare(request)
    FOLLOWING.opened()
    try:
        await resp.write(data)
        while budget is None or budget > 0:
            if _client_gone(request):
                return resp  # nobody reads: stop polling now, not when the pod goes
            live = current()
            finished = live is None or (live.get("status") or {}).get("phase") in _TERMINAL
            chunk = _read_from(path, offset)
            if chunk:
                offset += len(chunk)
                if budget is not None:
                    chunk = chunk[:budget]
                    budget -= len(chunk)
                await resp.write(chunk)
                continue
            if finished:
                break  # the file was read to its end after the pod had finished
            await asyncio.sleep(FOLLOW_POLL_SECONDS)
        await resp.write_eof()
    except (ConnectionResetError, ClientConnectionResetError):
        pass  # the client went away between two polls: an ordinary end of a follow
    finally:
        FOLLOWING.closed()
    return resp


class _OpenStreams:
    """How many follow streams this process serves: a stream ends when its client goes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0

    def opened(self) -> None:
        with self._lock:
            self._count += 1

    def closed(self) -> None:
        with self._lock:
            self._count -= 1

    @property
    def count(self) -> int:
        return self._count


FOLLOWING = _OpenStreams()


def _client_gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def _read_from(path: Path, offset: int) -> bytes:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read(_CHUNK)
    except OSError:
        return b""
