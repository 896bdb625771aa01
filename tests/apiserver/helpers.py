"""Small helpers shared by the API server tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import kubernetes
from support.waiting import poll


def call(
    api_client: kubernetes.client.ApiClient,
    method: str,
    path: str,
    body: Any = None,
    *,
    query: list[tuple[str, Any]] | None = None,
    content_type: str = "application/json",
) -> tuple[int, Any]:
    """A raw request through the official client; returns (status, parsed JSON body)."""
    params = api_client.param_serialize(
        method,
        path,
        query_params=query or [],
        header_params={"Content-Type": content_type, "Accept": "application/json"},
        body=body,
    )
    resp = api_client.call_api(*params)
    data = resp.read()
    try:
        return resp.status, json.loads(data) if data else None
    except ValueError:
        return resp.status, data


def expect_status(
    api_client: kubernetes.client.ApiClient,
    code: int,
    method: str,
    path: str,
    body: Any = None,
    **kw: Any,
) -> dict[str, Any]:
    """Do a raw request that must fail with ``code``; returns the Status body."""
    status, data = call(api_client, method, path, body, **kw)
    assert status == code, f"expected {code}, got {status}: {data}"
    assert isinstance(data, dict) and data["kind"] == "Status" and data["code"] == code, data
    return data


def api_error(fn: Callable[[], Any]) -> kubernetes.client.ApiException:
    """Run ``fn`` expecting an ApiException; return it."""
    try:
        fn()
    except kubernetes.client.ApiException as exc:
        return exc
    raise AssertionError("expected ApiException")


def eventually(pred: Callable[[], Any], timeout: float = 5.0) -> Any:
    """Poll until ``pred`` is truthy (a real cluster's controllers are asynchronous)."""
    return poll(pred, timeout, interval=0.05, failure="condition not met in time")


def pod(name: str = "p", **meta: Any) -> dict[str, Any]:
    """A minimal valid pod."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, **meta},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def watch_events(
    api_client: kubernetes.client.ApiClient,
    path: str,
    *,
    query: list[tuple[str, Any]] | None = None,
    max_events: int | None = None,
    until: Callable[[dict[str, Any]], bool] | None = None,
    read_timeout: float = 10.0,
) -> list[dict[str, Any]]:
    """Read a raw watch stream; stops after ``max_events``, when ``until(event)`` or at EOF."""
    q = [("watch", "true"), *(query or [])]
    params = api_client.param_serialize(
        "GET", path, query_params=q, header_params={"Accept": "application/json"}
    )
    resp = api_client.call_api(*params, _request_timeout=read_timeout)
    events: list[dict[str, Any]] = []
    try:
        for line in resp.response:
            if not line.strip():
                continue
            ev = json.loads(line)
            events.append(ev)
            if max_events is not None and len(events) >= max_events:
                break
            if until is not None and until(ev):
                break
    finally:
        resp.response.release_conn()
    return events
