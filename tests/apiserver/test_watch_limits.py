"""Watches are bounded: in all and per client (429 with Retry-After, as kube's
max-in-flight answers), and a watch whose client does not keep up is closed, so that
client watches again from where it was. Skipped against a real cluster."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import kubernetes
import pytest
import urllib3

from sedna.embedded.apiserver import APIServer
from sedna.testing import wait_until

from .helpers import call

ApiClient = kubernetes.client.ApiClient
pytestmark = pytest.mark.skipif(
    bool(os.environ.get("SEDNA_TEST_KUBECONFIG")),
    reason="server-internal test: not applicable to a real cluster",
)
CMS = "/api/v1/namespaces/default/configmaps"
OTHER_TOKEN = "another-users-token-0123456789abcdef"


def _client(srv: APIServer, token: str | None = None) -> ApiClient:
    return kubernetes.client.ApiClient(
        srv.client_configuration(),
        header_name="Authorization",
        header_value=f"Bearer {token or srv.token}",
    )


@pytest.fixture()
def srv() -> Iterator[APIServer]:
    s = APIServer(tokens=["main-token-0123456789abcdefghij", OTHER_TOKEN], max_watches=5,
                  max_watches_per_client=3)  # fmt: skip
    s.start()
    try:
        yield s
    finally:
        s.stop()


def _open_watch(client: ApiClient, query: list[tuple[str, Any]] | None = None) -> Any:
    """A watch response whose body is not read yet (status and headers are)."""
    params = client.param_serialize(
        "GET",
        CMS,
        query_params=[("watch", "true"), *(query or [])],
        header_params={"Accept": "application/json"},
    )
    return client.call_api(*params, _request_timeout=30).response


def _metric(client: ApiClient, name: str) -> float:
    status, text = call(client, "GET", "/metrics")
    assert status == 200
    for line in (text.decode() if isinstance(text, bytes) else str(text)).splitlines():
        if line.startswith(name) and not line.startswith("#"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in /metrics")


def test_per_client_and_total_caps_answer_429_with_retry_after(srv: APIServer) -> None:
    main, other = _client(srv), _client(srv, OTHER_TOKEN)
    held = [_open_watch(main) for _ in range(3)]
    assert all(r.status == 200 for r in held)
    refused = _open_watch(main)
    assert refused.status == 429
    assert refused.headers["Retry-After"] == "1"
    body = json.loads(refused.data)
    assert body["reason"] == "TooManyRequests" and body["details"]["retryAfterSeconds"] == 1
    assert "this client" in body["message"]
    # another user is another client: two more fit under the total of 5, then none
    held += [_open_watch(other) for _ in range(2)]
    assert [r.status for r in held[3:]] == [200, 200]
    over_total = _open_watch(other)
    assert over_total.status == 429 and "the server" in json.loads(over_total.data)["message"]
    # lists and gets are not watches: never refused by these caps
    assert call(main, "GET", CMS)[0] == 200
    assert _metric(main, 'apiserver_longrunning_requests{verb="WATCH"}') == 5
    # the client retries a 429 after Retry-After (urllib3): at least one refusal each
    assert _metric(main, "sedna_apiserver_watches_refused_total") >= 2
    for r in held:
        r.release_conn()
    main.close()
    other.close()


def test_a_client_that_hangs_up_frees_its_slots(srv: APIServer) -> None:
    main = _client(srv)
    for _ in range(4):  # open three idle watches, hang up, again: never refused
        pool = urllib3.PoolManager(ca_certs=srv.client_configuration().ssl_ca_cert)
        url = f"{srv.url}{CMS}?watch=true"
        headers = {"Authorization": f"Bearer {srv.token}"}
        held = [pool.request("GET", url, headers=headers, preload_content=False) for _ in range(3)]
        assert [r.status for r in held] == [200, 200, 200]
        for r in held:
            r.close()  # hang up without reading a byte
        pool.clear()
        wait_until(
            lambda: _metric(main, 'apiserver_longrunning_requests{verb="WATCH"}') == 0,
            timeout=10,
            what="the server to notice the hang-ups",
        )
    assert _metric(main, "sedna_apiserver_watches_refused_total") == 0
    main.close()


def test_unauthenticated_watches_take_no_slot(srv: APIServer) -> None:
    intruder = _client(srv, "wrong-token")
    for _ in range(6):
        assert _open_watch(intruder).status == 401
    main = _client(srv)
    assert _metric(main, 'apiserver_longrunning_requests{verb="WATCH"}') == 0
    assert _open_watch(main).status == 200
    assert call(intruder, "GET", "/metrics")[0] == 401
    main.close()
    intruder.close()


def test_a_watch_that_does_not_keep_up_is_closed_and_resumes(srv: APIServer) -> None:
    main = _client(srv)
    srv.watch_limits.queue_events = 4
    srv.watch_limits.queue_bytes = 1024 * 1024
    _, lst = call(main, "GET", CMS)
    start_rv = lst["metadata"]["resourceVersion"]
    stalled = _open_watch(main, [("resourceVersion", start_rv), ("allowWatchBookmarks", "true")])
    blob = "x" * (256 * 1024)
    names = [f"big-{i}" for i in range(60)]
    for name in names:  # ~15 MB the stalled client does not read: sockets fill, then its queue
        assert call(main, "POST", CMS, {"metadata": {"name": name}, "data": {"b": blob}})[0] == 201
    wait_until(lambda: srv.watch_limits.closed_slow == 1, timeout=20, what="the slow watch closed")
    # the stalled client reads what was sent before the close, then the end of the stream
    got = [json.loads(line) for line in stalled.data.splitlines() if line.strip()]
    stalled.release_conn()
    added = [e for e in got if e["type"] == "ADDED"]
    delivered = [e["object"]["metadata"]["name"] for e in added]
    assert len(delivered) < len(names) and delivered == names[: len(delivered)]
    last_rv = int(added[-1]["object"]["metadata"]["resourceVersion"]) if added else int(start_rv)
    marks = [
        int(e["object"]["metadata"]["resourceVersion"]) for e in got if e["type"] == "BOOKMARK"
    ]
    assert all(rv <= last_rv for rv in marks), "a bookmark skipped the dropped events"
    # as a client does: watch again from the last version it saw, and miss nothing
    rest = _read_all(main, [("resourceVersion", str(last_rv)), ("timeoutSeconds", "1")])
    assert delivered + [e["object"]["metadata"]["name"] for e in rest] == names
    assert _metric(main, "sedna_apiserver_watches_closed_slow_total") == 1
    wait_until(
        lambda: _metric(main, "sedna_apiserver_watch_queued_bytes") == 0,
        timeout=10,
        what="the dropped queue to count nothing",
    )
    main.close()


def _read_all(client: ApiClient, query: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    resp = _open_watch(client, query)
    out = [json.loads(line) for line in resp.data.splitlines() if line.strip()]
    resp.release_conn()
    return out
