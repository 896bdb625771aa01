"""Housekeeping: Event TTL, terminated and orphaned pod GC, stale container logs.

Every object goes in and out through the official client over HTTP; the sweeps are
called directly with the time they run at, so nothing waits on a real clock.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from sedna.embedded.apiserver import APIServer
from sedna.embedded.apiserver.housekeeping import event_last_write, parse_time
from sedna.testing import api_client_for
from tests.apiserver.helpers import call, eventually

NS = "default"
PODS = f"/api/v1/namespaces/{NS}/pods"
EVENTS = f"/api/v1/namespaces/{NS}/events"
NEW_EVENTS = f"/apis/events.k8s.io/v1/namespaces/{NS}/events"
TTL = 3600.0
MERGE = "application/merge-patch+json"


@pytest.fixture()
def server(tmp_path: Path) -> Iterator[APIServer]:
    srv = APIServer(
        "127.0.0.1",
        0,
        db_path=tmp_path / "state.db",
        pod_logs=tmp_path / "logs",
        event_ttl=TTL,
        terminated_pod_threshold=3,
    )
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture()
def client(server: APIServer) -> Iterator[kubernetes.client.ApiClient]:
    c = api_client_for(server)
    try:
        yield c
    finally:
        c.close()


def stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def names(client: kubernetes.client.ApiClient, path: str) -> list[str]:
    code, body = call(client, "GET", path)
    assert code == 200, body
    return sorted(i["metadata"]["name"] for i in body["items"])


def create(client: kubernetes.client.ApiClient, path: str, body: dict[str, Any]) -> Any:
    code, out = call(client, "POST", path, body)
    assert code == 201, out
    return out


def event(name: str, **fields: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "involvedObject": {"kind": "Pod", "namespace": NS, "name": "p"},
        "reason": "Test",
        "message": name,
        "type": "Normal",
        **fields,
    }


def pod(name: str, *, node: str | None = None, finalizers: list[str] | None = None) -> Any:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    meta: dict[str, Any] = {"name": name}
    if finalizers:
        meta["finalizers"] = finalizers
    return {"metadata": meta, "spec": spec}


def set_status(client: kubernetes.client.ApiClient, name: str, status: Any) -> None:
    code, out = call(
        client, "PATCH", f"{PODS}/{name}/status", {"status": status}, content_type=MERGE
    )
    assert code == 200, out


class Recorder:
    """A watch of pods through the official client, on a thread of its own."""

    def __init__(self, client: kubernetes.client.ApiClient, rv: str) -> None:
        self.deleted: dict[str, dict[str, Any]] = {}
        self._watch = kubernetes.watch.Watch()
        api = kubernetes.client.CoreV1Api(client)

        def run() -> None:
            stream = self._watch.stream(
                api.list_namespaced_pod, NS, resource_version=rv, timeout_seconds=30
            )
            try:
                for ev in stream:
                    if ev["type"] == "DELETED":
                        obj = ev["object"]
                        self.deleted[obj.metadata.name] = client.sanitize_for_serialization(obj)
            except Exception:  # the server stopped under the watch: the test is over
                return

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._watch.stop()


def list_rv(client: kubernetes.client.ApiClient, path: str) -> str:
    code, body = call(client, "GET", path)
    assert code == 200
    return str(body["metadata"]["resourceVersion"])


# -- Events ------------------------------------------------------------------------------


def test_events_expire_a_ttl_after_their_last_write(
    server: APIServer, client: kubernetes.client.ApiClient
) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    long_ago, later = now - timedelta(days=3), now + timedelta(minutes=50)
    # Like etcd's lease, the TTL runs from the write: an Event created now with old
    # timestamps lives a TTL from now; one written again later lives a TTL from then.
    create(client, EVENTS, event("old", firstTimestamp=stamp(long_ago), lastTimestamp=stamp(now)))
    create(client, EVENTS, event("repeated", firstTimestamp=stamp(now), lastTimestamp=stamp(later)))
    create(client, EVENTS, event("bare"))  # no time of its own but the creationTimestamp
    create(client, NEW_EVENTS, {
        "metadata": {"name": "new"}, "eventTime": now.strftime("%Y-%m-%dT%H:%M:%S.000000Z"),
        "reportingController": "x", "reportingInstance": "y", "action": "A", "reason": "R",
        "regarding": {"kind": "Pod", "name": "p"}, "type": "Normal",
    })  # fmt: skip
    assert server.sweep(now).events == 0
    assert server.sweep(now + timedelta(seconds=TTL - 60)).events == 0
    done = server.sweep(now + timedelta(seconds=TTL + 60))
    assert done.events == 3 and not done.more
    assert names(client, EVENTS) == ["repeated"]
    assert names(client, NEW_EVENTS) == []
    assert server.sweep(later + timedelta(seconds=TTL - 60)).events == 0
    assert server.sweep(later + timedelta(seconds=TTL)).events == 1
    assert names(client, EVENTS) == []


def test_an_event_with_no_time_at_all_expires_a_ttl_after_it_was_first_seen(
    server: APIServer, client: kubernetes.client.ApiClient
) -> None:
    # The API always stamps creationTimestamp; a store written by something else may not.
    bad = event("timeless", lastTimestamp="yesterday", series={"lastObservedTime": 5})
    bad["metadata"].update(namespace=NS, uid="u-timeless", resourceVersion="1")
    assert event_last_write(bad) is None
    server._call(lambda: server.store.load(("", "events"), bad))
    assert names(client, EVENTS) == ["timeless"]
    t0 = datetime(2030, 1, 1, tzinfo=UTC)
    assert server.sweep(t0).events == 0
    assert server.sweep(t0 + timedelta(seconds=TTL - 1)).events == 0
    assert server.sweep(t0 + timedelta(seconds=TTL)).events == 1
    assert names(client, EVENTS) == []


def test_a_ttl_of_zero_keeps_events(tmp_path: Path) -> None:
    with APIServer("127.0.0.1", 0, event_ttl=0) as srv:
        c = api_client_for(srv)
        try:
            create(c, EVENTS, event("kept", lastTimestamp="2001-01-01T00:00:00Z"))
            assert srv.sweep().events == 0
            assert names(c, EVENTS) == ["kept"]
        finally:
            c.close()


def test_time_parsing_is_lenient() -> None:
    assert parse_time("2024-05-01T10:00:00Z") == datetime(2024, 5, 1, 10, tzinfo=UTC)
    assert parse_time("2024-05-01T10:00:00.123456Z") is not None
    assert parse_time("2024-05-01T10:00:00") == datetime(2024, 5, 1, 10, tzinfo=UTC)
    for bad in (None, "", "soon", 17, ["2024-05-01T10:00:00Z"]):
        assert parse_time(bad) is None
    assert event_last_write({}) is None
    assert event_last_write({"metadata": "x", "series": "y", "lastTimestamp": 3}) is None


# -- terminated pods ---------------------------------------------------------------------


def test_the_oldest_terminated_pods_beyond_the_threshold_are_deleted(
    server: APIServer, client: kubernetes.client.ApiClient
) -> None:
    phases = {"p0": "Succeeded", "p1": "Failed", "p2": "Succeeded", "p3": "Succeeded",
              "p4": "Failed", "p5": "Running", "p6": "Pending"}  # fmt: skip
    for name, phase in phases.items():
        create(client, PODS, pod(name))
        set_status(client, name, {"phase": phase})
    create(client, PODS, pod("p7"))
    set_status(client, "p7", None)  # a pod without any status
    # p0 owns a ConfigMap: collecting p0 cascades as any delete does
    _, p0 = call(client, "GET", f"{PODS}/p0")
    owner = {"apiVersion": "v1", "kind": "Pod", "name": "p0", "uid": p0["metadata"]["uid"]}
    create(client, f"/api/v1/namespaces/{NS}/configmaps",
           {"metadata": {"name": "of-p0", "ownerReferences": [owner]}})  # fmt: skip
    watch = Recorder(client, list_rv(client, PODS))
    try:
        done = server.sweep()
        assert (done.terminated_pods, done.more) == (2, False)
        assert names(client, PODS) == ["p2", "p3", "p4", "p5", "p6", "p7"]
        eventually(lambda: set(watch.deleted) == {"p0", "p1"})
        assert watch.deleted["p0"]["status"]["phase"] == "Succeeded"
    finally:
        watch.stop()
    eventually(lambda: names(client, f"/api/v1/namespaces/{NS}/configmaps") == [])
    assert server.sweep().terminated_pods == 0  # at the threshold: nothing more
    set_status(client, "p5", {"phase": "Succeeded"})
    assert server.sweep().terminated_pods == 1
    assert names(client, PODS) == ["p3", "p4", "p5", "p6", "p7"]


def test_a_finalizer_holds_a_collected_pod_and_a_batch_stops_early(
    server: APIServer, client: kubernetes.client.ApiClient
) -> None:
    create(client, PODS, pod("a-held", finalizers=["example.com/keep"]))
    for name in ("a-held", "b", "c", "d", "e", "f"):
        if name != "a-held":
            create(client, PODS, pod(name))
        set_status(client, name, {"phase": "Succeeded"})
    server.housekeeper.batch = 1
    first = server.sweep()
    assert (first.terminated_pods, first.more) == (1, True)
    code, held = call(client, "GET", f"{PODS}/a-held")
    assert code == 200 and held["metadata"]["deletionTimestamp"], held
    # the held pod is on its way out: it no longer counts, the next oldest go
    assert server.sweep().terminated_pods == 1
    assert server.sweep().terminated_pods == 1
    assert server.sweep().terminated_pods == 0
    assert names(client, PODS) == ["a-held", "d", "e", "f"]
    code, out = call(client, "PATCH", f"{PODS}/a-held", {"metadata": {"finalizers": None}},
                     content_type=MERGE)  # fmt: skip
    assert code == 200, out
    assert names(client, PODS) == ["d", "e", "f"]


def test_a_threshold_of_zero_keeps_every_pod(tmp_path: Path) -> None:
    with APIServer("127.0.0.1", 0, terminated_pod_threshold=0) as srv:
        c = api_client_for(srv)
        try:
            for i in range(3):
                create(c, PODS, pod(f"z{i}"))
                set_status(c, f"z{i}", {"phase": "Succeeded"})
            assert srv.sweep().terminated_pods == 0
            assert len(names(c, PODS)) == 3
        finally:
            c.close()


def test_collected_pods_stay_gone_after_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    with APIServer("127.0.0.1", 0, db_path=db, terminated_pod_threshold=1) as srv:
        c = api_client_for(srv)
        try:
            for name in ("r0", "r1", "r2"):
                create(c, PODS, pod(name))
                set_status(c, name, {"phase": "Succeeded"})
            create(c, EVENTS, event("stale", lastTimestamp="2001-01-01T00:00:00Z"))
            done = srv.sweep(datetime.now(UTC) + timedelta(seconds=TTL + 60))
            assert (done.terminated_pods, done.events) == (2, 1)
        finally:
            c.close()
    with APIServer("127.0.0.1", 0, db_path=db, terminated_pod_threshold=1) as srv:
        c = api_client_for(srv)
        try:
            assert names(c, PODS) == ["r2"]
            assert names(c, EVENTS) == []
            assert srv.sweep().terminated_pods == 0
        finally:
            c.close()


# -- orphaned pods -----------------------------------------------------------------------


def test_pods_of_a_node_that_is_gone_are_failed_then_deleted_after_a_quarantine(
    server: APIServer, client: kubernetes.client.ApiClient
) -> None:
    create(client, "/api/v1/nodes", {"metadata": {"name": "here"}})
    create(client, PODS, pod("on-here", node="here"))
    create(client, PODS, pod("on-ghost", node="ghost"))
    create(client, PODS, pod("unbound"))
    set_status(client, "on-ghost", {"phase": "Running"})
    watch = Recorder(client, list_rv(client, PODS))
    try:
        t0 = datetime(2030, 1, 1, tzinfo=UTC)
        assert server.sweep(t0).orphaned_pods == 0
        assert server.sweep(t0 + timedelta(seconds=39)).orphaned_pods == 0
        assert server.sweep(t0 + timedelta(seconds=40)).orphaned_pods == 1
        assert names(client, PODS) == ["on-here", "unbound"]
        eventually(lambda: "on-ghost" in watch.deleted)
        final = watch.deleted["on-ghost"]["status"]
        assert final["phase"] == "Failed"
        assert [c["reason"] for c in final["conditions"] if c["type"] == "DisruptionTarget"] == [
            "DeletionByPodGC"
        ]
    finally:
        watch.stop()


def test_a_node_that_comes_back_ends_the_quarantine(
    server: APIServer, client: kubernetes.client.ApiClient
) -> None:
    create(client, PODS, pod("waits", node="late"))
    t0 = datetime(2030, 1, 1, tzinfo=UTC)
    server.sweep(t0)
    create(client, "/api/v1/nodes", {"metadata": {"name": "late"}})
    server.sweep(t0 + timedelta(seconds=30))
    code, _ = call(client, "DELETE", "/api/v1/nodes/late")
    assert code == 200
    assert server.sweep(t0 + timedelta(seconds=60)).orphaned_pods == 0  # quarantine anew
    assert server.sweep(t0 + timedelta(seconds=100)).orphaned_pods == 1


# -- container logs ----------------------------------------------------------------------


def test_logs_of_pods_that_no_longer_exist_are_removed(
    server: APIServer, client: kubernetes.client.ApiClient, tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    create(client, PODS, pod("alive"))
    kept = [logs / f"{NS}_alive_c.log", logs / "notes.txt", logs / "a_b.log", logs / "x__y.log"]
    stale = [logs / f"{NS}_deleted_c.log", logs / f"{NS}_deleted_init.log", logs / "o_p_c.log"]
    for f in kept + stale:
        f.write_text("x\n")
    assert server.sweep().logs == 3
    assert all(f.exists() for f in kept)
    assert not any(f.exists() for f in stale)


def test_a_missing_log_folder_is_no_error(tmp_path: Path) -> None:
    with APIServer("127.0.0.1", 0, pod_logs=tmp_path / "absent") as srv:
        assert srv.sweep().logs == 0


def test_the_periodic_sweep_runs_on_the_servers_loop(tmp_path: Path) -> None:
    def clock() -> datetime:  # the server's clock, two TTLs ahead
        return datetime.now(UTC) + timedelta(seconds=2 * TTL)

    with APIServer("127.0.0.1", 0, housekeeping_interval=0.05, clock=clock) as srv:
        c = api_client_for(srv)
        try:
            create(c, EVENTS, event("stale", lastTimestamp="2001-01-01T00:00:00Z"))
            eventually(lambda: names(c, EVENTS) == [])
        finally:
            c.close()
