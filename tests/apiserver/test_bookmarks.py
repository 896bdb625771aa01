"""Watch BOOKMARKs at kube-apiserver's cadence: only when asked for, about once a
minute, and once 2 s before the watch's deadline (kube's cacher), never every idle
second."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import kubernetes
import pytest

from sedna.embedded.apiserver import APIServer

from .helpers import call, expect_status, pod, watch_events

ApiClient = kubernetes.client.ApiClient


def _stream(api_client: ApiClient, path: str, query: list[tuple[str, Any]]) -> Iterator[Any]:
    params = api_client.param_serialize(
        "GET",
        path,
        query_params=[("watch", "true"), *query],
        header_params={"Accept": "application/json"},
    )
    resp = api_client.call_api(*params, _request_timeout=15)
    try:
        for line in resp.response:
            if line.strip():
                yield json.loads(line)
    finally:
        resp.response.release_conn()


def test_idle_watch_gets_one_bookmark_before_its_deadline(
    api_client: ApiClient, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/pods"
    _, listed = call(api_client, "GET", path)
    rv = listed["metadata"]["resourceVersion"]
    query = [("resourceVersion", rv), ("allowWatchBookmarks", "true"), ("timeoutSeconds", 4)]
    seen: list[dict[str, Any]] = []
    for ev in _stream(api_client, path, query):
        seen.append(ev)
        if ev["type"] == "BOOKMARK" and len(seen) == 1:
            # the watch is still open: a change made now still reaches it
            status, _ = call(api_client, "POST", path, pod("after-bookmark"))
            assert status == 201
    assert [e["type"] for e in seen] == ["BOOKMARK", "ADDED"], seen
    bookmark, added = seen
    assert int(bookmark["object"]["metadata"]["resourceVersion"]) >= int(rv)
    assert added["object"]["metadata"]["name"] == "after-bookmark"


def test_watch_shorter_than_the_pre_deadline_gets_no_bookmark(
    api_client: ApiClient, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    query = [("allowWatchBookmarks", "true"), ("timeoutSeconds", 1)]
    assert watch_events(api_client, path, query=query) == []


@pytest.fixture(scope="module")
def fast_server() -> Iterator[APIServer]:
    """A server whose bookmark frequency is a fifth of a second instead of a minute."""
    srv = APIServer("127.0.0.1", 0, schema_validation=False, bookmark_frequency=0.2)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture()
def fast_client(fast_server: APIServer) -> Iterator[ApiClient]:
    client = ApiClient(fast_server.client_configuration())
    client.set_default_header("Authorization", f"Bearer {fast_server.token}")
    try:
        yield client
    finally:
        client.close()


def test_bookmark_frequency_is_the_servers(fast_client: ApiClient) -> None:
    path = "/api/v1/namespaces/default/configmaps"
    _, listed = call(fast_client, "GET", path)
    query = [
        ("resourceVersion", listed["metadata"]["resourceVersion"]),
        ("allowWatchBookmarks", "true"),
        ("timeoutSeconds", 3),
    ]
    evs = watch_events(fast_client, path, query=query, max_events=3)
    assert [e["type"] for e in evs] == ["BOOKMARK"] * 3
    assert all(e["object"]["kind"] == "ConfigMap" for e in evs)


def test_no_bookmarks_unless_asked(fast_client: ApiClient) -> None:
    path = "/api/v1/namespaces/default/configmaps"
    _, listed = call(fast_client, "GET", path)
    query = [("resourceVersion", listed["metadata"]["resourceVersion"]), ("timeoutSeconds", 3)]
    assert watch_events(fast_client, path, query=query) == []


@pytest.mark.parametrize("value", ["inf", "nan", "1e308", "1.5"])
def test_timeout_seconds_must_be_an_integer(api_client: ApiClient, value: str) -> None:
    """A float `inf` once held a watch open for ever."""
    expect_status(
        api_client,
        400,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        query=[("watch", "true"), ("timeoutSeconds", value)],
    )
