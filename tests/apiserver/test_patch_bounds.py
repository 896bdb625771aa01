"""Patches are bounded while they are applied, not after.

A 1.8 KB JSON patch whose ``copy`` operations copy a list into itself once took the
server 29 s and 2 GB before the size check on the result could refuse it. Each bound
here is met by a patch that the old code applied in full (and stored, or refused only
after the fact with another answer).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import Any

import kubernetes
import pytest

from sedna.embedded.apiserver import APIServer
from sedna.embedded.apiserver.errors import APIError
from sedna.embedded.apiserver.patch_budget import MAX_JSON_PATCH_OPS, PatchBudget
from sedna.embedded.apiserver.patches import JSON_PATCH, strategic_merge

from .helpers import call

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("SEDNA_TEST_KUBECONFIG")),
    reason="server-internal test: not applicable to a real cluster",
)

GROUP = "bounds.example.com"
CM = "/api/v1/namespaces/default/configmaps"
BLOBS = f"/apis/{GROUP}/v1/namespaces/default/blobs"


def _crd() -> dict[str, Any]:
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
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


@pytest.fixture(scope="module")
def client() -> Iterator[kubernetes.client.ApiClient]:
    srv = APIServer()
    srv.start()
    srv.install_crd(_crd())
    api = kubernetes.client.ApiClient(srv.client_configuration())
    api.set_default_header("Authorization", f"Bearer {srv.token}")
    try:
        yield api
    finally:
        api.close()
        srv.stop()


def _fresh(client: kubernetes.client.ApiClient, path: str, body: dict[str, Any]) -> str:
    name = body["metadata"]["name"]
    call(client, "DELETE", f"{path}/{name}")
    status, data = call(client, "POST", path, body)
    assert status == 201, data
    return f"{path}/{name}"


def _patch(client: kubernetes.client.ApiClient, path: str, body: Any, ctype: str) -> Any:
    return call(client, "PATCH", path, body, content_type=ctype)


def test_a_copy_bomb_is_refused_before_it_grows(client: kubernetes.client.ApiClient) -> None:
    # Twelve doublings of a 1 KiB list: 4 MiB in the end, 3 MiB copied on the way.
    path = _fresh(client, CM, {"metadata": {"name": "bomb"}, "data": {"a": "x"}})
    ops: list[dict[str, Any]] = [
        {"op": "add", "path": "/metadata/finalizers", "value": ["f" * 1024]}
    ]
    ops += [{"op": "copy", "from": "/metadata/finalizers", "path": "/metadata/finalizers/-"}] * 12
    status, data = _patch(client, path, ops, JSON_PATCH)
    assert status == 422, data
    assert "copy" in data["message"] and data["reason"] == "Invalid"
    status, obj = call(client, "GET", path)
    assert status == 200 and "finalizers" not in obj["metadata"]  # nothing was stored


def test_the_full_size_copy_bomb_is_refused(client: kubernetes.client.ApiClient) -> None:
    path = _fresh(client, CM, {"metadata": {"name": "bomb40"}})
    ops: list[dict[str, Any]] = [{"op": "add", "path": "/metadata/finalizers", "value": ["a"]}]
    ops += [{"op": "copy", "from": "/metadata/finalizers", "path": "/metadata/finalizers/-"}] * 40
    status, data = _patch(client, path, ops, JSON_PATCH)
    assert status == 422, data
    assert call(client, "GET", "/api/v1/namespaces/default")[0] == 200


def test_more_than_10000_operations_get_413(client: kubernetes.client.ApiClient) -> None:
    path = _fresh(client, CM, {"metadata": {"name": "many"}, "data": {"a": "x"}})
    ops = [{"op": "test", "path": "/data/a", "value": "x"}] * (MAX_JSON_PATCH_OPS + 1)
    status, data = _patch(client, path, ops, JSON_PATCH)
    assert status == 413, data
    assert data["reason"] == "RequestEntityTooLarge" and "10000" in data["message"]
    status, _ = _patch(client, path, ops[:MAX_JSON_PATCH_OPS], JSON_PATCH)
    assert status == 200


def test_adds_that_nest_too_deep_are_refused(client: kubernetes.client.ApiClient) -> None:
    path = _fresh(
        client, BLOBS, {"apiVersion": f"{GROUP}/v1", "kind": "Blob", "metadata": {"name": "deep"}}
    )
    ops = [{"op": "add", "path": "/spec", "value": {}}]
    at = "/spec"
    for _ in range(150):  # one level each: every value is small
        at += "/a"
        ops.append({"op": "add", "path": at, "value": {}})
    status, data = _patch(client, path, ops, JSON_PATCH)
    assert status == 422, data
    assert "deeper than 128" in data["message"]
    status, obj = call(client, "GET", path)
    assert status == 200 and "spec" not in obj


def test_moves_that_nest_too_deep_are_refused(
    client: kubernetes.client.ApiClient,
) -> None:
    body = {"apiVersion": f"{GROUP}/v1", "kind": "Blob", "metadata": {"name": "self"}}
    path = _fresh(client, BLOBS, dict(body, spec={"a": []}))
    # each round wraps the value in one more object: deeper, never bigger
    ops = [
        {"op": "add", "path": "/spec/w", "value": {}},
        {"op": "move", "from": "/spec/a", "path": "/spec/w/a"},
        {"op": "move", "from": "/spec/w", "path": "/spec/a"},
    ] * 140
    status, data = _patch(client, path, ops, JSON_PATCH)
    assert status == 422, data
    assert "deeper than 128" in data["message"]


@pytest.mark.parametrize(
    "ops",
    [
        [{"op": "move", "from": 7, "path": "/data/b"}],
        [{"op": "copy", "path": "/data/b"}],
        [{"op": "add", "path": ["x"], "value": 1}],
        [{"op": "move", "from": "/data", "path": "/data/inner"}],
        ["add"],
        [{"op": "frobnicate", "path": "/data"}],
    ],
)
def test_malformed_json_patches_get_a_status(client: kubernetes.client.ApiClient, ops: Any) -> None:
    path = _fresh(client, CM, {"metadata": {"name": "malformed"}, "data": {"a": "x"}})
    status, data = _patch(client, path, ops, JSON_PATCH)
    assert status in (400, 422), data
    assert data["kind"] == "Status"


def test_strategic_merge_of_long_lists_costs_their_length() -> None:
    # 20,000 env entries patched onto 20,000: matching by scanning cost 10^8 steps
    cur = [{"name": f"e{i}", "value": "old"} for i in range(20_000)]
    patch = [{"name": f"e{i}", "value": "new"} for i in range(0, 40_000, 2)]
    budget = PatchBudget(work=400_000)
    out = strategic_merge({"env": cur}, {"env": patch}, budget)
    assert len(out["env"]) == 30_000
    assert out["env"][0] == {"name": "e0", "value": "new"}
    assert out["env"][1] == {"name": "e1", "value": "old"}
    assert out["env"][-1] == {"name": "e39998", "value": "new"}


def test_strategic_merge_keeps_deletes_and_duplicates_in_order() -> None:
    cur = [{"name": "a", "v": 1}, {"name": "b"}, {"name": "a", "v": 2}]
    patch = [{"name": "a", "$patch": "delete"}, {"name": "a", "v": 3}, {"name": "c"}]
    out = strategic_merge({"env": cur}, {"env": patch})
    assert out["env"] == [{"name": "b"}, {"name": "a", "v": 3}, {"name": "c"}]
    fins = strategic_merge(
        {"finalizers": ["x", "y"]},
        {"finalizers": ["y", "z"], "$deleteFromPrimitiveList/finalizers": ["x"]},
    )
    assert fins["finalizers"] == ["y", "z"]


def test_a_patch_too_expensive_to_apply_is_refused() -> None:
    with pytest.raises(APIError) as err:
        strategic_merge(
            {"env": []}, {"env": [{"name": str(i)} for i in range(100)]}, PatchBudget(work=50)
        )
    assert err.value.code == 422 and "too expensive" in err.value.message


class _HeldPatch:
    """A merge patch sent on a thread of its own, held on the server's patch thread
    (its first application waits for `release`) until the test has done its part."""

    def __init__(
        self, client: kubernetes.client.ApiClient, path: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from sedna.embedded.apiserver import writes

        self.entered, self.release = threading.Event(), threading.Event()
        self.calls = 0
        self.answers: list[int] = []
        real = writes.apply_patch

        def held(ctype: str, doc: Any, patch: Any) -> Any:
            self.calls += 1
            if self.calls == 1:
                self.entered.set()
                assert self.release.wait(30)
            return real(ctype, doc, patch)

        monkeypatch.setattr(writes, "apply_patch", held)
        body = {"data": {"a": "y"}}
        self.thread = threading.Thread(
            target=lambda: self.answers.append(
                _patch(client, path, body, "application/merge-patch+json")[0]
            )
        )
        self.thread.start()
        assert self.entered.wait(30)

    def finish(self) -> None:
        self.release.set()
        self.thread.join(30)


def _other_call(client: kubernetes.client.ApiClient, *args: Any) -> Any:
    """A call on a client of its own (the first one's connection is busy)."""
    other = kubernetes.client.ApiClient(client.configuration)
    other.set_default_header("Authorization", client.default_headers["Authorization"])
    try:
        return call(other, *args)
    finally:
        other.close()


def test_other_requests_are_served_while_a_patch_is_applied(
    client: kubernetes.client.ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The patch is applied off the server's loop: a request that comes meanwhile is
    answered before the patch is done (on the loop it would wait for it)."""
    path = _fresh(client, CM, {"metadata": {"name": "held"}, "data": {"a": "x"}})
    held = _HeldPatch(client, path, monkeypatch)
    try:
        status, obj = _other_call(client, "GET", path)  # while the patch is held
        assert status == 200 and obj["data"] == {"a": "x"}
    finally:
        held.finish()
    assert held.answers == [200]
    assert call(client, "GET", path)[1]["data"] == {"a": "y"}


def test_a_write_while_a_patch_is_applied_is_kept(
    client: kubernetes.client.ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A patch applied to an object that changed meanwhile is applied again to the
    new one, as kube-apiserver does: the other write is not lost."""
    path = _fresh(client, CM, {"metadata": {"name": "raced"}, "data": {"a": "x"}})
    held = _HeldPatch(client, path, monkeypatch)
    try:
        _, current = _other_call(client, "GET", path)
        current["data"]["b"] = "z"
        assert _other_call(client, "PUT", path, current)[0] == 200
    finally:
        held.finish()
    assert held.answers == [200] and held.calls == 2
    assert call(client, "GET", path)[1]["data"] == {"a": "y", "b": "z"}
