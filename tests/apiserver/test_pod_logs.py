"""pods/log (`kubectl logs`) through the official client, served from the kubelet's files.

The server is given a log directory, as the embedded mode gives it `<stateDir>/logs`;
the tests write the files as the simulated kubelet does (`sedna.embedded.pod_logs`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient, CoreV1Api
from kubernetes.client.exceptions import ApiException

from sedna.embedded.apiserver import APIServer
from sedna.embedded.pod_logs import append_line, log_path

NS = "default"


class Logs:
    def __init__(self, srv: APIServer, log_dir: Path) -> None:
        cfg = srv.client_configuration()
        self.client = ApiClient(
            cfg, header_name="Authorization", header_value=f"Bearer {srv.token}"
        )
        self.core = CoreV1Api(self.client)
        self.dir = log_dir

    def pod(
        self,
        name: str,
        containers: tuple[str, ...] = ("main",),
        *,
        inits: tuple[str, ...] = (),
        node: str = "edge-node",
        state: str = "running",
    ) -> None:
        spec: dict[str, Any] = {"containers": [{"name": c, "image": "x"} for c in containers]}
        if inits:
            spec["initContainers"] = [{"name": c, "image": "x"} for c in inits]
        if node:
            spec["nodeName"] = node
        self.core.create_namespaced_pod(NS, {"metadata": {"name": name}, "spec": spec})
        states = {
            "running": {"running": {"startedAt": "2026-11-30T00:00:00Z"}},
            "waiting": {"waiting": {"reason": "ContainerCreating"}},
        }
        status = {
            "phase": "Running" if state == "running" else "Pending",
            "containerStatuses": [
                {"name": c, "ready": state == "running", "restartCount": 0, "image": "x",
                 "imageID": "", "state": states[state]}
                for c in containers
            ],
        }  # fmt: skip
        self.core.patch_namespaced_pod_status(name, NS, {"status": status})

    def write(self, pod: str, container: str, *lines: str) -> None:
        for line in lines:
            append_line(self.dir, NS, pod, container, line)

    def read(self, pod: str, **kwargs: Any) -> str:
        return str(self.core.read_namespaced_pod_log(pod, NS, **kwargs))

    def error(self, pod: str, **kwargs: Any) -> ApiException:
        with pytest.raises(ApiException) as info:
            self.core.read_namespaced_pod_log(pod, NS, **kwargs)
        return info.value


@pytest.fixture()
def logs(tmp_path: Path) -> Iterator[Logs]:
    srv = APIServer(pod_logs=tmp_path / "logs")
    srv.start()
    out = Logs(srv, tmp_path / "logs")
    try:
        yield out
    finally:
        out.client.close()
        srv.stop()


def test_the_log_of_a_single_container_pod(logs: Logs) -> None:
    logs.pod("p")
    logs.write("p", "main", "one", "two", "three")
    assert logs.read("p") == "one\ntwo\nthree\n"
    assert logs.read("p", container="main") == "one\ntwo\nthree\n"


def test_tail_lines_and_limit_bytes(logs: Logs) -> None:
    logs.pod("p")
    logs.write("p", "main", "one", "two", "three")
    assert logs.read("p", tail_lines=2) == "two\nthree\n"
    assert logs.read("p", tail_lines=0) == ""
    assert logs.read("p", limit_bytes=6) == "one\ntw"
    assert logs.read("p", tail_lines=1, limit_bytes=3) == "thr"


def test_several_containers_need_a_name(logs: Logs) -> None:
    logs.pod("multi", ("a", "b"), inits=("setup",))
    logs.write("multi", "b", "from b")
    logs.write("multi", "setup", "from setup")
    err = logs.error("multi")
    assert err.status == 400
    assert "a container name must be specified for pod multi, choose one of: [a b]" in err.body
    assert "or one of the init containers: [setup]" in err.body
    assert logs.read("multi", container="b") == "from b\n"
    assert logs.read("multi", container="setup") == "from setup\n"


def test_a_running_container_without_output_has_an_empty_log(logs: Logs) -> None:
    logs.pod("quiet")
    assert logs.read("quiet") == ""


def test_bad_requests_name_what_is_wrong(logs: Logs) -> None:
    logs.pod("p")
    logs.write("p", "main", "x")
    cases: list[tuple[dict[str, Any], str]] = [
        ({"container": "nope"}, "container nope is not valid for pod p"),
        ({"tail_lines": -1}, "tailLines: Invalid value: -1: must be greater than or equal to 0"),
        ({"limit_bytes": 0}, "limitBytes: Invalid value: 0: must be greater than or equal to 1"),
        ({"previous": True}, "previous: not kept by the embedded kubelet's logs"),
        ({"timestamps": True}, "timestamps: not kept by the embedded kubelet's logs"),
        ({"since_seconds": 10}, "sinceSeconds: not kept by the embedded kubelet's logs"),
    ]
    for kwargs, message in cases:
        err = logs.error("p", **kwargs)
        assert err.status == 400, kwargs
        assert message in err.body, (kwargs, err.body)


def test_a_malformed_tail_lines_is_a_bad_request(logs: Logs) -> None:
    logs.pod("p")
    status, _, body = _raw_get(logs, "/api/v1/namespaces/default/pods/p/log?tailLines=abc")
    assert status == 400 and 'tailLines: Invalid value: \\"abc\\": must be an integer' in body


def test_pods_that_cannot_have_logs_yet(logs: Logs) -> None:
    logs.pod("waiting", state="waiting")
    err = logs.error("waiting")
    assert err.status == 400
    assert 'container \\"main\\" in pod \\"waiting\\" is waiting to start: ContainerCreating' in (
        err.body
    )
    logs.pod("unbound", node="", state="waiting")
    err = logs.error("unbound")
    assert err.status == 400 and "pod unbound does not have a host assigned" in err.body
    assert logs.error("missing").status == 404


def test_only_get_is_allowed(logs: Logs) -> None:
    logs.pod("p")
    status, _, _ = _raw_get(logs, "/api/v1/namespaces/default/pods/p/log", method="POST")
    assert status == 405


def test_follow_streams_until_the_pod_finishes(logs: Logs) -> None:
    logs.pod("f")
    logs.write("f", "main", "first")

    def kubelet() -> None:
        time.sleep(0.3)
        logs.write("f", "main", "second")
        time.sleep(0.3)
        logs.write("f", "main", "last")
        logs.core.patch_namespaced_pod_status("f", NS, {"status": {"phase": "Succeeded"}})

    writer = threading.Thread(target=kubelet)
    writer.start()
    resp = logs.core.read_namespaced_pod_log(
        "f", NS, follow=True, _preload_content=False, _request_timeout=30
    )
    try:
        body = resp.data.decode()  # ends when the server ends the stream
    finally:
        resp.release_conn()
        writer.join()
    assert body == "first\nsecond\nlast\n"


def test_follow_ends_when_the_pod_is_deleted(logs: Logs) -> None:
    logs.pod("d")
    logs.write("d", "main", "only")

    def delete() -> None:
        time.sleep(0.3)
        logs.core.delete_namespaced_pod("d", NS, grace_period_seconds=0)

    deleter = threading.Thread(target=delete)
    deleter.start()
    resp = logs.core.read_namespaced_pod_log(
        "d", NS, follow=True, _preload_content=False, _request_timeout=30
    )
    try:
        assert resp.data.decode() == "only\n"
    finally:
        resp.release_conn()
        deleter.join()


def test_discovery_lists_pods_log(logs: Logs) -> None:
    resources = logs.core.get_api_resources().resources
    (entry,) = [r for r in resources if r.name == "pods/log"]
    assert entry.verbs == ["get"] and entry.kind == "Pod"


def test_a_server_without_a_kubelet_says_so(
    embedded_apiserver: APIServer, api_client: ApiClient, namespace: str
) -> None:
    core = CoreV1Api(api_client)
    core.create_namespaced_pod(
        namespace,
        {"metadata": {"name": "p"},
         "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "x"}]}},
    )  # fmt: skip
    with pytest.raises(ApiException) as info:
        core.read_namespaced_pod_log("p", namespace)
    assert info.value.status == 503 and "this API server has no kubelet" in info.value.body


def _raw_get(logs: Logs, path: str, method: str = "GET") -> tuple[int, Any, str]:
    resp = logs.client.rest_client.pool_manager.request(
        method, logs.client.configuration.host + path, headers=logs.client.default_headers
    )
    return resp.status, resp.headers, resp.data.decode()


@pytest.mark.parametrize(
    ("ns", "pod_name", "container"),
    [
        ("default", "p", "../../x"),
        ("default", "p", "a/b"),
        ("default", "..", "c"),
        ("../etc", "p", "c"),
        ("default", "p", ""),
    ],
)
def test_log_path_refuses_names_that_leave_the_directory(
    ns: str, pod_name: str, container: str, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match="cannot name a log file"):
        log_path(tmp_path, ns, pod_name, container)
    assert log_path(tmp_path, "default", "p", "main") == tmp_path / "default_p_main.log"
