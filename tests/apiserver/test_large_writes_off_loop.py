"""The work of a large write runs beside the event loop, never on it.

Checking and copying an object of megabytes takes tens of milliseconds of Python; on
the loop, every other client of the server waited that long (a strategic merge of
20,000 env entries held GETs for 132 ms). The checks here are structural: which thread
did the work in proportion to the object, so they hold on a busy machine. The waits
themselves are measured in `bench/bench_hostile_patches.py`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

import kubernetes
import pytest

from sedna.embedded.apiserver import APIServer
from sedna.embedded.apiserver.patches import JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH

from .helpers import call

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("SEDNA_TEST_KUBECONFIG")),
    reason="server-internal test: not applicable to a real cluster",
)

PODS = "/api/v1/namespaces/default/pods"
GROUP = "offloop.example.com"
BLOBS = f"/apis/{GROUP}/v1/namespaces/default/blobs"
LOOP_THREAD = "embedded-apiserver"


def _crd() -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {"items": {"type": "array", "items": {"type": "string"}}},
            }
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"blobs.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {"plural": "blobs", "singular": "blob", "kind": "Blob"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


class Threads:
    """Which thread ran each of the server's size-proportional steps, per object name."""

    STEPS = ("decode_create", "prepare_update", "_check_schema")

    def __init__(self, server: APIServer) -> None:
        self.seen: list[tuple[str, str, str]] = []  # (step, object name, thread name)
        self._server = server
        self._saved: dict[str, Callable[..., Any]] = {}

    def __enter__(self) -> Threads:
        ops = self._server.ops
        for step in self.STEPS:
            original = getattr(ops, step)
            self._saved[step] = original

            def recording(*args: Any, _step: str = step, _f: Any = original, **kw: Any) -> Any:
                obj = next((a for a in args if isinstance(a, dict) and "metadata" in a), {})
                name = str((obj.get("metadata") or {}).get("name") or "")
                self.seen.append((_step, name, threading.current_thread().name))
                return _f(*args, **kw)

            setattr(ops, step, recording)
        return self

    def __exit__(self, *exc: object) -> None:
        for step in self.STEPS:
            delattr(self._server.ops, step)  # the class's method again

    def of(self, name: str) -> set[tuple[str, str]]:
        return {(step, thread.rsplit("_", 1)[0]) for step, n, thread in self.seen if n == name}


@pytest.fixture(scope="module")
def server() -> Iterator[APIServer]:
    srv = APIServer()
    srv.start()
    srv.install_crd(_crd())
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def client(server: APIServer) -> Iterator[kubernetes.client.ApiClient]:
    api = kubernetes.client.ApiClient(server.client_configuration())
    api.set_default_header("Authorization", f"Bearer {server.token}")
    try:
        yield api
    finally:
        api.close()


def _big_pod(name: str, entries: int = 12_000) -> dict[str, Any]:
    env = [{"name": f"E{i}", "value": "v" * 20} for i in range(entries)]  # ~400 KB
    return {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox", "env": env}]},
    }


def _loop_thread_name(server: APIServer) -> str:
    done = threading.Event()
    name: list[str] = []

    def mark() -> None:
        name.append(threading.current_thread().name)
        done.set()

    assert server._loop is not None
    server._loop.call_soon_threadsafe(mark)
    assert done.wait(30)
    return name[0]


def test_a_large_create_put_and_patch_are_checked_off_the_loop(
    server: APIServer, client: kubernetes.client.ApiClient
) -> None:
    loop = _loop_thread_name(server)
    call(client, "DELETE", f"{PODS}/big")
    with Threads(server) as threads:
        status, created = call(client, "POST", PODS, _big_pod("big"))
        assert status == 201, created
        created["spec"]["containers"][0]["env"][0]["value"] = "put"
        status, data = call(client, "PUT", f"{PODS}/big", created)
        assert status == 200, data
        more = [{"name": f"E{i}", "value": "w"} for i in range(0, 24_000, 2)]
        strategic = {"spec": {"containers": [{"name": "c", "env": more}]}}
        status, data = call(client, "PATCH", f"{PODS}/big", strategic, content_type=STRATEGIC_PATCH)
        assert status == 200, data
        merge = {"metadata": {"labels": {"patched": "yes"}}}
        status, data = call(client, "PATCH", f"{PODS}/big", merge, content_type=MERGE_PATCH)
        assert status == 200 and data["metadata"]["labels"] == {"patched": "yes"}
    ran = threads.of("big")
    assert ("decode_create", "apiserver-patch") in ran
    assert ("prepare_update", "apiserver-patch") in ran
    assert not [step for step, thread in ran if thread == loop], threads.seen
    status, pod = call(client, "GET", f"{PODS}/big")
    env = pod["spec"]["containers"][0]["env"]
    assert env[0]["value"] == "w" and len(env) == 18_000  # the PUT, then the merge on it


def test_a_large_custom_object_is_schema_checked_off_the_loop(
    server: APIServer, client: kubernetes.client.ApiClient
) -> None:
    loop = _loop_thread_name(server)
    blob = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Blob",
        "metadata": {"name": "large"},
        "spec": {"items": ["x" * 30] * 12_000},
    }
    call(client, "DELETE", f"{BLOBS}/large")
    with Threads(server) as threads:
        status, data = call(client, "POST", BLOBS, blob)
        assert status == 201, data
        wrong = ["x" * 30] * 12_000 + [1]  # as large, and one item not a string
        bad = {**blob, "metadata": {"name": "large-bad"}, "spec": {"items": wrong}}
        status, data = call(client, "POST", BLOBS, bad)
        assert status == 422 and "spec.items[12000]" in data["message"], data
    assert ("_check_schema", "apiserver-patch") in threads.of("large")
    assert not [s for s, thread in threads.of("large") | threads.of("large-bad") if thread == loop]
    assert call(client, "GET", f"{BLOBS}/large-bad")[0] == 404  # nothing stored


def test_a_name_taken_while_a_large_create_was_checked_is_still_refused(
    server: APIServer, client: kubernetes.client.ApiClient
) -> None:
    """The store may move while the pool checks: the name is looked up again after."""
    call(client, "DELETE", f"{PODS}/raced")
    ops = server.ops
    original = ops._check_schema
    raced = threading.Event()

    def schema_then_race(rt: Any, obj: dict[str, Any], fv: Any) -> None:
        original(rt, obj, fv)
        if obj["metadata"]["name"] == "raced" and not raced.is_set():
            raced.set()  # another client's small create lands meanwhile (on the loop)
            small = {"metadata": {"name": "raced"}, "spec": _big_pod("x", 1)["spec"]}
            status, _ = call(client2, "POST", PODS, small)
            assert status == 201

    client2 = kubernetes.client.ApiClient(server.client_configuration())
    client2.set_default_header("Authorization", f"Bearer {server.token}")
    ops._check_schema = schema_then_race  # type: ignore[method-assign]
    try:
        status, data = call(client, "POST", PODS, _big_pod("raced"))
    finally:
        del ops._check_schema
        client2.close()
    assert raced.is_set()
    assert status == 409 and data["reason"] == "AlreadyExists", data
    status, pod = call(client, "GET", f"{PODS}/raced")
    assert len(pod["spec"]["containers"][0]["env"]) == 1  # the small one stayed


def test_a_malformed_large_patch_or_body_is_still_a_clear_4xx(
    server: APIServer, client: kubernetes.client.ApiClient
) -> None:
    call(client, "DELETE", f"{PODS}/shape")
    status, _ = call(client, "POST", PODS, _big_pod("shape"))
    assert status == 201
    bad_env = {"spec": {"containers": [{"name": "c", "env": "not-a-list" + "x" * 300_000}]}}
    status, data = call(client, "PATCH", f"{PODS}/shape", bad_env, content_type=STRATEGIC_PATCH)
    assert 400 <= status < 500 and "env" in data["message"], data
    ops = [{"op": "replace", "path": "/metadata/name", "value": "other" + "x" * 300_000}]
    status, data = call(client, "PATCH", f"{PODS}/shape", ops, content_type=JSON_PATCH)
    assert status == 400 and "cannot be changed by a patch" in data["message"], data
    status, data = call(client, "POST", PODS, ["not", "an", "object", "x" * 300_000])
    assert status == 400 and "unknown format" in data["message"], data
    status, pod = call(client, "GET", f"{PODS}/shape")
    assert len(pod["spec"]["containers"][0]["env"]) == 12_000  # unchanged
