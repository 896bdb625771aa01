"""A store that cannot write (a full disk) tells the truth: a write it could not make
durable is answered 500 and is not visible, not after a restart either; /readyz fails
naming the store while it cannot write and passes again by itself once it can.

The disk is made full below the API, in the store's own SQLite layer
(`APIServer.store_faults`), never in the client. Skipped against a real cluster."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from sedna.embedded.apiserver import APIServer
from sedna.testing import wait_until

from .helpers import call, pod, watch_events

ApiClient = kubernetes.client.ApiClient
pytestmark = pytest.mark.skipif(
    bool(os.environ.get("SEDNA_TEST_KUBECONFIG")),
    reason="server-internal test: not applicable to a real cluster",
)
CMS = "/api/v1/namespaces/default/configmaps"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.io"},
    "spec": {
        "group": "example.io",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
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


def _client(srv: APIServer) -> ApiClient:
    return kubernetes.client.ApiClient(
        srv.client_configuration(), header_name="Authorization", header_value=f"Bearer {srv.token}"
    )


class Persisted:
    """A persisted server and its client that a test may restart."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self.srv = APIServer(db_path=db)
        self.srv.store.health.probe_interval = 0.05
        self.srv.start()
        self.client = _client(self.srv)

    def restart(self) -> None:
        self.close()
        self.__init__(self.db)  # type: ignore[misc]

    def close(self) -> None:
        self.client.close()
        self.srv.stop()


@pytest.fixture()
def persisted(tmp_path: Path) -> Iterator[Persisted]:
    p = Persisted(tmp_path / "state.db")
    try:
        yield p
    finally:
        p.close()


def _rv(client: ApiClient) -> int:
    _, lst = call(client, "GET", CMS)
    return int(lst["metadata"]["resourceVersion"])


def _readyz(client: ApiClient) -> tuple[int, str]:
    status, body = call(client, "GET", "/readyz", query=[("verbose", "true")])
    return status, body.decode() if isinstance(body, bytes) else str(body)


def _fails_as_full_disk(status: int, body: Any) -> None:
    assert status == 500, body
    assert body["kind"] == "Status" and body["reason"] == "InternalError", body
    assert "database or disk is full" in body["message"], body


def test_a_create_the_disk_refuses_is_not_visible_nor_restored(persisted: Persisted) -> None:
    client = persisted.client
    rv_before = _rv(client)
    persisted.srv.store_faults.fail_writes()
    _fails_as_full_disk(*call(client, "POST", CMS, {"metadata": {"name": "lost"}}))
    assert call(client, "GET", f"{CMS}/lost")[0] == 404
    _, lst = call(client, "GET", CMS)
    assert "lost" not in [o["metadata"]["name"] for o in lst["items"]]
    assert int(lst["metadata"]["resourceVersion"]) == rv_before
    # a watch from before the failure sees no event for it
    events = watch_events(
        client, CMS, query=[("resourceVersion", str(rv_before)), ("timeoutSeconds", 1)]
    )
    assert events == []
    persisted.restart()
    assert call(persisted.client, "GET", f"{CMS}/lost")[0] == 404


def test_an_update_and_a_delete_the_disk_refuses_change_nothing(persisted: Persisted) -> None:
    client = persisted.client
    _, cm = call(client, "POST", CMS, {"metadata": {"name": "kept"}, "data": {"v": "1"}})
    call(client, "POST", "/api/v1/namespaces/default/pods", pod("p"))
    persisted.srv.store_faults.fail_writes()
    changed = dict(cm, data={"v": "2"})
    _fails_as_full_disk(*call(client, "PUT", f"{CMS}/kept", changed))
    _fails_as_full_disk(*call(client, "DELETE", "/api/v1/namespaces/default/pods/p"))
    status, got = call(client, "GET", f"{CMS}/kept")
    assert status == 200 and got == cm
    assert call(client, "GET", "/api/v1/namespaces/default/pods/p")[0] == 200
    persisted.restart()
    status, got = call(persisted.client, "GET", f"{CMS}/kept")
    assert status == 200 and got["data"] == {"v": "1"}
    assert got["metadata"]["resourceVersion"] == cm["metadata"]["resourceVersion"]
    assert call(persisted.client, "GET", "/api/v1/namespaces/default/pods/p")[0] == 200


def test_a_crd_the_disk_refuses_serves_no_kind(persisted: Persisted) -> None:
    client = persisted.client
    persisted.srv.store_faults.fail_writes()
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    _fails_as_full_disk(*call(client, "POST", crds, CRD))
    assert call(client, "GET", "/apis/example.io/v1/namespaces/default/widgets")[0] == 404
    persisted.srv.store_faults.fail_writes(None)
    assert call(client, "POST", crds, CRD)[0] == 201
    assert call(client, "GET", "/apis/example.io/v1/namespaces/default/widgets")[0] == 200


def test_readyz_names_the_store_while_it_cannot_write_and_recovers_alone(
    persisted: Persisted,
) -> None:
    client = persisted.client
    assert _readyz(client)[0] == 200
    persisted.srv.store_faults.fail_writes()
    call(client, "POST", CMS, {"metadata": {"name": "x"}})
    status, text = _readyz(client)
    assert status == 500
    assert "[-]store failed" in text and "database or disk is full" in text, text
    assert persisted.srv.store_error is not None
    # space returns; no client writes: the store's probe brings readiness back
    persisted.srv.store_faults.fail_writes(None)
    wait_until(lambda: _readyz(client)[0] == 200, timeout=10, what="/readyz passes again")
    assert persisted.srv.store_error is None
    status, made = call(client, "POST", CMS, {"metadata": {"name": "x"}})
    assert status == 201
    persisted.restart()
    assert (
        call(persisted.client, "GET", f"{CMS}/x")[1]["metadata"]["uid"] == (made["metadata"]["uid"])
    )


def test_other_storage_errors_are_refused_the_same_way(persisted: Persisted) -> None:
    client = persisted.client
    persisted.srv.store_faults.fail_writes("disk I/O error")
    status, body = call(client, "POST", CMS, {"metadata": {"name": "io"}})
    assert status == 500 and "disk I/O error" in body["message"]
    assert call(client, "GET", f"{CMS}/io")[0] == 404
    persisted.srv.store_faults.fail_writes(None)
    assert call(client, "POST", CMS, {"metadata": {"name": "io"}})[0] == 201


def _tiny_fs_unavailable() -> str | None:
    if shutil.which("unshare") is None:
        return "a real full disk needs unshare(1) to mount a private tmpfs; it is not installed"
    probe = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
         "mount -t tmpfs -o size=64k tmpfs /mnt"],
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    if probe.returncode != 0:
        why = probe.stderr.strip().splitlines()[-1:] or ["no reason given"]
        return f"a real full disk needs a private tmpfs mount, not permitted here: {why[0]}"
    return None


def test_a_real_full_file_system(tmp_path: Path) -> None:
    """The same promises on a real 2 MiB tmpfs that fills up (a private mount namespace)."""
    reason = _tiny_fs_unavailable()
    if reason is not None:
        pytest.skip(reason)
    mount = tmp_path / "tiny"
    mount.mkdir()
    script = Path(__file__).with_name("tiny_fs_run.py")
    run = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
         'mount -t tmpfs -o size=2m tmpfs "$1" && exec "$2" "$3" "$1"', "sh",
         str(mount), sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    refused = seen["refused"]
    assert refused is not None, seen
    assert refused["status"] == 500 and "full" in refused["message"], refused
    assert seen["visible_after_refusal"] == 404
    assert seen["readyz_full"][0] == 500 and "[-]store failed" in seen["readyz_full"][1]
    assert seen["readyz_freed"] == 200 and seen["retry"] == 201
    assert set(seen["after_restart"].values()) == {200}, seen["after_restart"]


def test_a_cascade_the_disk_stopped_is_finished_once_it_takes_writes(
    persisted: Persisted,
) -> None:
    """The owner's removal is durable and answered as done; the dependent the garbage
    collector could not delete then goes with the next housekeeping sweep."""
    client = persisted.client
    _, owner = call(client, "POST", CMS, {"metadata": {"name": "owner"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
           "uid": owner["metadata"]["uid"]}  # fmt: skip
    dep = pod("dependent", ownerReferences=[ref])
    assert call(client, "POST", "/api/v1/namespaces/default/pods", dep)[0] == 201
    persisted.srv.store_faults.fail_writes(after=1)  # the owner's removal, then nothing
    status, body = call(client, "DELETE", f"{CMS}/owner")
    assert status == 200, body
    assert call(client, "GET", f"{CMS}/owner")[0] == 404
    assert call(client, "GET", "/api/v1/namespaces/default/pods/dependent")[0] == 200
    persisted.srv.sweep()  # still full: nothing changes, nothing is lost
    assert call(client, "GET", "/api/v1/namespaces/default/pods/dependent")[0] == 200
    persisted.srv.store_faults.fail_writes(None)
    persisted.srv.sweep()
    assert call(client, "GET", "/api/v1/namespaces/default/pods/dependent")[0] == 404
    assert persisted.srv.ops.unfinished == {}


def test_the_stores_recovery_is_announced_once() -> None:
    """The embedded mode retries the GM's waiting syncs when the store writes again
    (`sedna.embedded.mode`): the listeners run once per recovery, and a failing one
    stops neither the others nor the write."""
    from sedna.embedded.apiserver.store_health import StoreHealth

    health = StoreHealth()
    heard: list[str] = []

    def broken() -> None:
        raise RuntimeError("a listener's bug")

    health.on_recovered += [broken, lambda: heard.append("recovered")]
    health.succeeded()
    assert heard == []  # it never failed: nothing to announce
    health.failed("database or disk is full")
    assert not health.ok
    health.succeeded()
    health.succeeded()
    assert health.ok and heard == ["recovered"]
