"""The work of a large write runs beside the event loop, never on it, and the write
means what it meant on the loop.

Checking, comparing and encoding an object of megabytes takes tens of milliseconds of
Python; on the loop, every other client of the server waited that long (a strategic
merge of 20,000 env entries held GETs for 132 ms). The size-proportional steps of a
write (the shape and schema checks, the encoding) run on the write pool (`writes`,
`pool`): the tests here record which thread ran each, rather than time the loop, so
they hold on a busy machine (the waits themselves are measured in
`bench/bench_hostile_patches.py`). Then what must not change: the resourceVersion
precondition, a write made while a draft was worked out is not lost (the draft is
worked out again), the bytes stored are the bytes served and watched, and bad input is
still a clear 4xx.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

import kubernetes
import orjson
import pytest
import urllib3

from sedna.embedded.apiserver import APIServer, bodies, operations, pool, store
from sedna.embedded.apiserver.bodies import LARGE_BYTES, MAX_BODY_BYTES, Encoded
from sedna.embedded.apiserver.errors import APIError
from sedna.embedded.apiserver.operations import Operations
from sedna.embedded.apiserver.patches import JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH

from .helpers import call, watch_events

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("SEDNA_TEST_KUBECONFIG")),
    reason="server-internal test: not applicable to a real cluster",
)

GROUP = "large.example.com"
NS = "/api/v1/namespaces/default"
CM = f"{NS}/configmaps"
PODS = f"{NS}/pods"
BOXES = f"/apis/{GROUP}/v1/namespaces/default/boxes"
LOOP_THREAD = "embedded-apiserver"


def _crd() -> dict[str, Any]:
    """Boxes: a structural schema that prunes unknown fields of spec (Warning headers)."""
    spec = {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "string"}}},
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"boxes.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {"plural": "boxes", "singular": "box", "kind": "Box"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}},
                }
            ],
        },
    }


@pytest.fixture(scope="module")
def server() -> Iterator[APIServer]:
    srv = APIServer()
    srv.start()
    srv.install_crd(_crd())
    try:
        yield srv
    finally:
        srv.stop()


def _client(srv: APIServer) -> kubernetes.client.ApiClient:
    api = kubernetes.client.ApiClient(srv.client_configuration())
    api.set_default_header("Authorization", f"Bearer {srv.token}")
    return api


@pytest.fixture
def client(server: APIServer) -> Iterator[kubernetes.client.ApiClient]:
    api = _client(server)
    try:
        yield api
    finally:
        api.close()


def _big_data(n: int = 4_000) -> dict[str, str]:
    """About 440 KB of ConfigMap data: past LARGE_BYTES."""
    return {f"k{i}": "v" * 100 for i in range(n)}


def _env(n: int, value: str) -> list[dict[str, str]]:
    return [{"name": f"E{i}", "value": value} for i in range(n)]


def _pod(name: str, env: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox", "env": env}]},
    }


def _fresh(client: kubernetes.client.ApiClient, path: str, body: dict[str, Any]) -> str:
    name = body["metadata"]["name"]
    call(client, "DELETE", f"{path}/{name}")
    status, data = call(client, "POST", path, body)
    assert status == 201, data
    return f"{path}/{name}"


class Steps:
    """Where each size-proportional step of a write ran: (step, object name, thread)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[tuple[str, str, str]] = []
        self._wrap(monkeypatch, operations, "validate_object", lambda a, kw: a[0])
        self._wrap(monkeypatch, operations, "validate_custom_resource", lambda a, kw: a[1])
        self._wrap(monkeypatch, store, "encode_object", lambda a, kw: a[0])
        steps = self

        class RecordedEncoded(Encoded):
            def __init__(self, obj: dict[str, Any]) -> None:
                steps._record("encode", obj)
                super().__init__(obj)

        monkeypatch.setattr(operations, "Encoded", RecordedEncoded)

    def _record(self, step: str, obj: Any) -> None:
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        name = meta.get("name") if isinstance(meta, dict) else None
        self.seen.append((step, str(name), threading.current_thread().name))

    def _wrap(
        self,
        monkeypatch: pytest.MonkeyPatch,
        module: Any,
        attr: str,
        obj_of: Callable[[tuple[Any, ...], dict[str, Any]], Any],
    ) -> None:
        real = getattr(module, attr)

        def recorded(*args: Any, **kwargs: Any) -> Any:
            self._record(attr, obj_of(args, kwargs))
            return real(*args, **kwargs)

        monkeypatch.setattr(module, attr, recorded)

    def reset(self) -> None:
        """Forget what the test's setup did."""
        self.seen.clear()

    def of(self, name: str) -> list[tuple[str, str]]:
        return [(step, thread) for step, n, thread in self.seen if n == name]

    def assert_off_loop(self, name: str, *expected: str) -> None:
        """Every step of ``name``'s write ran on the pool, ``expected`` among them."""
        steps = self.of(name)
        assert {step for step, _ in steps} >= set(expected), steps
        on_loop = [(s, t) for s, t in steps if not t.startswith(pool.THREAD_PREFIX)]
        assert not on_loop, f"size-proportional steps on the loop: {on_loop}"


@pytest.fixture
def steps(monkeypatch: pytest.MonkeyPatch) -> Steps:
    return Steps(monkeypatch)


# ---- where the work runs ----------------------------------------------------------------


def test_a_large_strategic_merge_is_checked_and_encoded_off_the_loop(
    client: kubernetes.client.ApiClient, steps: Steps
) -> None:
    path = _fresh(client, PODS, _pod("env", _env(20_000, "v")))
    before = call(client, "GET", path)[1]["metadata"]["resourceVersion"]
    steps.reset()
    patch = {"spec": {"containers": [{"name": "c", "env": _env(40_000, "w")[::2]}]}}
    status, answer = call(client, "PATCH", path, patch, content_type=STRATEGIC_PATCH)
    assert status == 200, answer
    steps.assert_off_loop("env", "validate_object", "encode")
    env = answer["spec"]["containers"][0]["env"]
    assert len(env) == 30_000 and env[0] == {"name": "E0", "value": "w"}
    assert env[1] == {"name": "E1", "value": "v"}
    assert int(answer["metadata"]["resourceVersion"]) > int(before)
    assert call(client, "GET", path)[1] == answer  # what was answered is what is stored


def test_a_large_put_is_worked_out_off_the_loop(
    client: kubernetes.client.ApiClient, steps: Steps
) -> None:
    path = _fresh(client, CM, {"metadata": {"name": "put"}, "data": {"a": "x"}})
    current = call(client, "GET", path)[1]
    current["data"] = _big_data()
    steps.reset()
    status, answer = call(client, "PUT", path, current)
    assert status == 200, answer
    steps.assert_off_loop("put", "validate_object", "encode")
    assert answer["data"] == current["data"]
    assert call(client, "GET", path)[1] == answer


def test_a_large_create_is_worked_out_off_the_loop(
    client: kubernetes.client.ApiClient, steps: Steps
) -> None:
    call(client, "DELETE", f"{CM}/created")
    status, answer = call(
        client, "POST", CM, {"metadata": {"name": "created"}, "data": _big_data()}
    )
    assert status == 201, answer
    steps.assert_off_loop("created", "validate_object", "encode")
    assert answer["metadata"]["uid"] and answer["metadata"]["resourceVersion"]
    assert call(client, "GET", f"{CM}/created")[1] == answer


def test_a_small_status_write_to_a_large_object_is_worked_out_off_the_loop(
    client: kubernetes.client.ApiClient, steps: Steps
) -> None:
    """The body is small, the object it lands in is not: checked and encoded whole."""
    path = _fresh(client, PODS, _pod("status", _env(20_000, "v")))
    current = call(client, "GET", path)[1]
    steps.reset()
    body = {"metadata": {"name": "status"}, "status": {"phase": "Running"}}
    status, answer = call(client, "PUT", f"{path}/status", body)
    assert status == 200, answer
    steps.assert_off_loop("status", "validate_object", "encode")
    assert answer["status"] == {"phase": "Running"} and answer["spec"] == current["spec"]


def test_a_small_write_stays_on_the_loop(client: kubernetes.client.ApiClient, steps: Steps) -> None:
    """Small writes do not wait on the pool behind a large one."""
    call(client, "DELETE", f"{CM}/small")
    assert call(client, "POST", CM, {"metadata": {"name": "small"}, "data": {"a": "x"}})[0] == 201
    assert {thread for _, thread in steps.of("small")} == {LOOP_THREAD}


def test_a_large_custom_resource_patch_keeps_its_pruning_warnings(
    server: APIServer, client: kubernetes.client.ApiClient, steps: Steps
) -> None:
    """The schema prunes on a pool thread; the Warning headers still reach the client."""
    body = {"apiVersion": f"{GROUP}/v1", "kind": "Box", "metadata": {"name": "box"}}
    path = _fresh(client, BOXES, dict(body, spec={"items": []}))
    steps.reset()
    patch = {"spec": {"items": ["x" * 100] * 4_000, "stray": 1}}
    params = client.param_serialize(
        "PATCH",
        path,
        header_params={"Content-Type": MERGE_PATCH, "Accept": "application/json"},
        body=patch,
    )
    resp = client.call_api(*params)
    answer = json.loads(resp.read())
    assert resp.status == 200, answer
    steps.assert_off_loop("box", "validate_custom_resource", "encode")
    assert "stray" not in answer["spec"] and len(answer["spec"]["items"]) == 4_000
    assert any("spec.stray" in w for w in resp.headers.getlist("Warning"))


def test_a_large_custom_object_is_schema_checked_off_the_loop(
    client: kubernetes.client.ApiClient, steps: Steps
) -> None:
    blob = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Box",
        "metadata": {"name": "large"},
        "spec": {"items": ["x" * 30] * 12_000},
    }
    call(client, "DELETE", f"{BOXES}/large")
    status, data = call(client, "POST", BOXES, blob)
    assert status == 201, data
    wrong = ["x" * 30] * 12_000 + [1]  # as large, and one item not a string
    bad = {**blob, "metadata": {"name": "large-bad"}, "spec": {"items": wrong}}
    status, data = call(client, "POST", BOXES, bad)
    assert status == 422 and "spec.items[12000]" in data["message"], data
    steps.assert_off_loop("large", "validate_custom_resource", "encode")
    steps.assert_off_loop("large-bad", "validate_custom_resource")
    assert call(client, "GET", f"{BOXES}/large-bad")[0] == 404  # nothing stored


# ---- the bytes stored are the bytes served and watched ---------------------------------


def test_watchers_get_the_bytes_the_store_wrote(client: kubernetes.client.ApiClient) -> None:
    path = _fresh(client, CM, {"metadata": {"name": "watched"}, "data": {"a": "x"}})
    rv = call(client, "GET", path)[1]["metadata"]["resourceVersion"]
    status, answer = call(client, "PATCH", path, {"data": _big_data()}, content_type=MERGE_PATCH)
    assert status == 200, answer
    events = watch_events(
        client,
        CM,
        query=[("resourceVersion", rv), ("fieldSelector", "metadata.name=watched")],
        max_events=1,
    )
    assert events[0]["type"] == "MODIFIED" and events[0]["object"] == answer
    assert answer["metadata"]["resourceVersion"] != rv


def test_the_encoded_object_is_what_orjson_gives() -> None:
    """The version spliced into the bytes lands where orjson puts it, key or no key."""
    for meta in ({"name": "a", "resourceVersion": "7", "uid": "u"}, {"name": "a", "uid": "u"}):
        obj = {"kind": "ConfigMap", "metadata": dict(meta), "data": {"resourceVersion": "x"}}
        encoded = Encoded(obj)
        assert obj["metadata"] == meta  # not changed
        obj["metadata"]["resourceVersion"] = "12345"
        assert encoded.with_rv("12345") == orjson.dumps(obj)


def test_the_size_limit_counts_the_version_spliced_in() -> None:
    room = MAX_BODY_BYTES - len(orjson.dumps({"metadata": {"resourceVersion": "1"}, "d": ""}))
    obj = {"metadata": {}, "d": "x" * room}
    encoded = Encoded(obj)  # exactly at the limit with a one-digit version
    assert len(encoded.with_rv("1")) == MAX_BODY_BYTES
    with pytest.raises(APIError) as err:
        encoded.with_rv("22")
    assert err.value.code == 413
    with pytest.raises(APIError) as err:
        Encoded({"metadata": {}, "d": "x" * (room + 1)})
    assert err.value.code == 413


# ---- concurrency: what the loop used to guarantee ------------------------------------


def _updated_name(args: tuple[Any, ...]) -> str:
    return str(args[0]["metadata"]["name"])  # draft_update(rt, old, new, ...)


def _created_name(args: tuple[Any, ...]) -> str:
    meta = args[1].get("metadata") or {}  # draft_create(rt, ns, body, ...)
    return str(meta.get("name") or meta.get("generateName"))


def _large(value: Any) -> bool:
    return len(orjson.dumps(value)) > LARGE_BYTES


class Held:
    """``Operations.<method>`` for a large body of object ``name``: its first call
    waits, once it has worked the write out (on the pool), until `release`; the write
    that made it is sent on a thread of its own. ``calls`` counts its attempts, refused
    ones too (the other clients' small writes are not held nor counted)."""

    def __init__(
        self,
        monkeypatch: pytest.MonkeyPatch,
        method: str,
        name: str,
        send: Callable[[], tuple[int, Any]],
    ) -> None:
        self.entered, self.release = threading.Event(), threading.Event()
        self.calls = 0
        self.answers: list[tuple[int, Any]] = []
        real = getattr(Operations, method)
        name_of = _updated_name if method == "draft_update" else _created_name

        def held(ops: Operations, rt: Any, *args: Any, **kwargs: Any) -> Any:
            mine = name_of(args) == name and _large(args[1])
            self.calls += mine
            draft = real(ops, rt, *args, **kwargs)
            if mine and self.calls == 1:
                self.entered.set()
                assert self.release.wait(30)
            return draft

        monkeypatch.setattr(Operations, method, held)
        self.thread = threading.Thread(target=lambda: self.answers.append(send()))
        self.thread.start()
        assert self.entered.wait(30)

    def finish(self) -> tuple[int, Any]:
        self.release.set()
        self.thread.join(30)
        return self.answers[0]


def test_a_large_put_with_a_stale_version_is_a_conflict(
    server: APIServer, client: kubernetes.client.ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The precondition is checked again against the version the PUT really replaces:
    a write that lands while the PUT is worked out makes it a 409, and is kept."""
    path = _fresh(client, CM, {"metadata": {"name": "raced-put"}, "data": {"a": "x"}})
    current = call(client, "GET", path)[1]
    big = dict(current, data=_big_data())
    with _client(server) as putter, _client(server) as other:
        held = Held(
            monkeypatch, "draft_update", "raced-put", lambda: call(putter, "PUT", path, big)
        )
        patch = {"data": {"b": "z"}}
        assert call(other, "PATCH", path, patch, content_type=MERGE_PATCH)[0] == 200
        status, data = held.finish()
    assert status == 409 and data["reason"] == "Conflict", data
    assert held.calls == 2  # worked out again on the new version, then refused
    assert call(client, "GET", path)[1]["data"] == {"a": "x", "b": "z"}


def test_a_large_put_without_a_version_replaces_the_newest(
    server: APIServer, client: kubernetes.client.ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _fresh(client, CM, {"metadata": {"name": "unconditional"}, "data": {"a": "x"}})
    big = {"metadata": {"name": "unconditional"}, "data": _big_data()}
    with _client(server) as putter, _client(server) as other:
        held = Held(
            monkeypatch, "draft_update", "unconditional", lambda: call(putter, "PUT", path, big)
        )
        labels = {"metadata": {"labels": {"l": "1"}}}
        status, between = call(other, "PATCH", path, labels, content_type=MERGE_PATCH)
        assert status == 200
        status, answer = held.finish()
    assert status == 200, answer
    assert held.calls == 2
    assert int(answer["metadata"]["resourceVersion"]) > int(between["metadata"]["resourceVersion"])
    assert call(client, "GET", path)[1] == answer


def test_a_large_create_of_a_name_taken_meanwhile_is_already_exists(
    server: APIServer, client: kubernetes.client.ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    call(client, "DELETE", f"{CM}/taken")
    big = {"metadata": {"name": "taken"}, "data": _big_data()}
    with _client(server) as creator, _client(server) as other:
        held = Held(monkeypatch, "draft_create", "taken", lambda: call(creator, "POST", CM, big))
        small = {"metadata": {"name": "taken"}, "data": {"a": "first"}}
        assert call(other, "POST", CM, small)[0] == 201
        status, data = held.finish()
    assert status == 409 and data["reason"] == "AlreadyExists", data
    assert call(client, "GET", f"{CM}/taken")[1]["data"] == {"a": "first"}


def test_a_generated_name_taken_meanwhile_is_drawn_again(
    server: APIServer, client: kubernetes.client.ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = iter(["gen-first", "gen-second"])
    monkeypatch.setattr(operations, "generate_name", lambda base: next(names))
    for name in ("gen-first", "gen-second"):
        call(client, "DELETE", f"{CM}/{name}")
    big = {"metadata": {"generateName": "gen-"}, "data": _big_data()}
    with _client(server) as creator, _client(server) as other:
        held = Held(monkeypatch, "draft_create", "gen-", lambda: call(creator, "POST", CM, big))
        small = {"metadata": {"name": "gen-first"}, "data": {"a": "first"}}
        assert call(other, "POST", CM, small)[0] == 201
        status, answer = held.finish()
    assert status == 201, answer
    assert answer["metadata"]["name"] == "gen-second"
    assert call(client, "GET", f"{CM}/gen-first")[1]["data"] == {"a": "first"}


# ---- bad input is still a clear 4xx ----------------------------------------------------


def _raw(server: APIServer, method: str, path: str, body: bytes, ctype: str) -> tuple[int, Any]:
    """A request with a body sent as it is (the client would encode or retype it)."""
    http = urllib3.PoolManager(ca_certs=server.client_configuration().ssl_ca_cert)
    headers = {"Authorization": f"Bearer {server.token}", "Content-Type": ctype}
    resp = http.request(method, f"{server.url}{path}", body=body, headers=headers)
    http.clear()
    return resp.status, json.loads(resp.data)


def _expect(status_data: tuple[int, Any], code: int, reason: str, text: str) -> None:
    status, data = status_data
    assert status == code, data
    assert data["kind"] == "Status" and data["reason"] == reason, data
    assert text in data["message"], data["message"]


def test_large_writes_with_bad_bodies_get_a_status(client: kubernetes.client.ApiClient) -> None:
    path = _fresh(client, CM, {"metadata": {"name": "bad"}, "data": {"a": "x"}})
    big = _big_data()
    _expect(call(client, "PUT", path, {"metadata": [], "data": big}), 400, "BadRequest",
            "metadata must be an object")  # fmt: skip
    _expect(call(client, "PUT", path, {"metadata": {"name": "other"}, "data": big}), 400,
            "BadRequest", "does not match the name on the URL")  # fmt: skip
    stale = {"metadata": {"name": "bad", "resourceVersion": "1"}, "data": big}
    _expect(call(client, "PUT", path, stale), 409, "Conflict", "has been modified")
    wrong = dict(big, k7=7)
    _expect(call(client, "PUT", path, {"metadata": {"name": "bad"}, "data": wrong}), 422,
            "Invalid", "data[k7]: Invalid value: 7: must be a string")  # fmt: skip
    _expect(call(client, "POST", CM, {"metadata": {"name": "bad"}, "data": big}), 409,
            "AlreadyExists", '"bad" already exists')  # fmt: skip
    listed = ["not", "an", "object", "x" * 300_000]
    _expect(call(client, "POST", CM, listed), 400, "BadRequest", "unknown format")
    missing = "/api/v1/namespaces/nowhere/configmaps"
    _expect(call(client, "POST", missing, {"metadata": {"name": "x"}, "data": big}), 404,
            "NotFound", '"nowhere" not found')  # fmt: skip
    assert call(client, "GET", path)[1]["data"] == {"a": "x"}  # nothing was stored


def test_patches_with_bad_bodies_get_a_status(
    server: APIServer, client: kubernetes.client.ApiClient
) -> None:
    path = _fresh(client, PODS, _pod("badpatch", _env(20_000, "v")))
    _expect(call(client, "PATCH", path, [{"a": 1}], content_type=STRATEGIC_PATCH), 400,
            "BadRequest", "patch body must be a JSON object")  # fmt: skip
    _expect(_raw(server, "PATCH", path, b'{"op": "add"}', JSON_PATCH), 400,
            "BadRequest", "json patch must be a list of operations")  # fmt: skip
    _expect(_raw(server, "PATCH", path, b"{not json", MERGE_PATCH), 400,
            "BadRequest", "invalid JSON")  # fmt: skip
    _expect(_raw(server, "PATCH", path, b"", STRATEGIC_PATCH), 400,
            "BadRequest", "the request body is empty")  # fmt: skip
    rename = {"metadata": {"name": "other"}}
    _expect(call(client, "PATCH", path, rename, content_type=MERGE_PATCH), 400, "BadRequest",
            "cannot be changed by a patch")  # fmt: skip
    ops = [{"op": "replace", "path": "/metadata/name", "value": "other" + "x" * 300_000}]
    _expect(call(client, "PATCH", path, ops, content_type=JSON_PATCH), 400, "BadRequest",
            "cannot be changed by a patch")  # fmt: skip
    broken = {"spec": {"containers": [{"name": "c", "env": "E0=v"}]}}
    _expect(call(client, "PATCH", path, broken, content_type=STRATEGIC_PATCH), 422, "Invalid",
            "spec.containers[0].env: Invalid value")  # fmt: skip
    assert len(call(client, "GET", path)[1]["spec"]["containers"][0]["env"]) == 20_000


def test_a_patch_past_the_size_limit_is_413(client: kubernetes.client.ApiClient) -> None:
    path = _fresh(client, CM, {"metadata": {"name": "grown"}, "data": _big_data(18_000)})
    more = {"data": {f"m{i}": "w" * 100 for i in range(12_000)}}  # 1.3 MB: 3.3 MB in all
    _expect(call(client, "PATCH", path, more, content_type=MERGE_PATCH), 413,
            "RequestEntityTooLarge", "limit is 3145728")  # fmt: skip
    assert len(call(client, "GET", path)[1]["data"]) == 18_000


# ---- the pool's jobs and the garbage collector -------------------------------------------


def test_the_collector_is_off_while_a_job_runs() -> None:
    """A collection holds the GIL, and so the loop, for its walk of the job's objects:
    none runs while a pool job does, and the collector is back once the last ends."""
    assert gc.isenabled()
    first_in, first_out = threading.Event(), threading.Event()

    def first() -> bool:
        first_in.set()
        assert first_out.wait(30)
        return gc.isenabled()

    async def run() -> tuple[bool, bool, bool]:
        held = asyncio.ensure_future(pool.off_loop(first))
        assert await asyncio.get_running_loop().run_in_executor(None, first_in.wait, 30)
        during_second = await pool.off_loop(gc.isenabled)
        after_second = gc.isenabled()  # the first job still runs
        first_out.set()
        return await held, during_second, after_second

    assert asyncio.run(run()) == (False, False, False)
    assert gc.isenabled()


def test_a_flood_of_jobs_gives_the_collector_back() -> None:
    now = [0.0]
    pause = pool.CollectorPause(clock=lambda: now[0])
    try:
        pause.begin()
        now[0] = 1.0
        pause.begin()  # a second job before the first ends
        pause.end()
        assert not gc.isenabled()
        now[0] = pool.MAX_PAUSE + 0.5
        pause.begin()  # no gap for longer than MAX_PAUSE: the collector runs again
        assert gc.isenabled()
        pause.end()
        pause.end()
        assert gc.isenabled()
        pause.begin()  # the pool drained: the next job pauses it again
        assert not gc.isenabled()
        pause.end()
        assert gc.isenabled()
        gc.disable()  # off before a job: not turned on by it
        pause.begin()
        pause.end()
        assert not gc.isenabled()
    finally:
        gc.enable()


# ---- deletes and the garbage collector copy what they change only ---------------------


def _stored(server: APIServer, name: str) -> dict[str, Any]:
    obj = server.store.get(("", "configmaps"), "default", name)
    assert obj is not None
    return obj


def test_marking_a_large_object_deleted_copies_its_metadata_only(
    server: APIServer, client: kubernetes.client.ApiClient
) -> None:
    """A DELETE held by a finalizer once deep-copied the object on the loop (125 ms for
    a 3 MB one); stored objects are never changed in place, so the rest is shared."""
    body = {"metadata": {"name": "held", "finalizers": ["x/y"]}, "data": _big_data()}
    path = _fresh(client, CM, body)
    before = _stored(server, "held")
    status, data = call(client, "DELETE", path)
    assert status == 202 and data["metadata"]["deletionTimestamp"], data
    after = _stored(server, "held")
    assert after["data"] is before["data"]  # shared, not copied
    assert "deletionTimestamp" not in before["metadata"]  # the old version untouched
    patch = {"metadata": {"finalizers": None}}
    assert call(client, "PATCH", path, patch, content_type=MERGE_PATCH)[0] == 200
    assert call(client, "GET", path)[0] == 404


def test_orphaning_a_large_dependent_copies_its_metadata_only(
    server: APIServer, client: kubernetes.client.ApiClient
) -> None:
    owner = call(client, "GET", _fresh(client, CM, {"metadata": {"name": "owner"}}))[1]
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
           "uid": owner["metadata"]["uid"]}  # fmt: skip
    dep = {"metadata": {"name": "dependent", "ownerReferences": [ref]}, "data": _big_data()}
    path = _fresh(client, CM, dep)
    before = _stored(server, "dependent")
    orphan = [("propagationPolicy", "Orphan")]
    assert call(client, "DELETE", f"{CM}/owner", query=orphan)[0] == 200
    after = _stored(server, "dependent")
    assert "ownerReferences" not in after["metadata"] and after["data"] is before["data"]
    assert before["metadata"]["ownerReferences"] == [ref]
    assert call(client, "GET", path)[1]["data"] == dep["data"]


def test_large_means_past_the_body_threshold() -> None:
    assert LARGE_BYTES == bodies.LARGE_BYTES and len(orjson.dumps(_big_data())) > LARGE_BYTES
