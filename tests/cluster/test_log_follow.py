"""`kubectl logs -f`: the server ends a follow stream once its client has gone."""

from __future__ import annotations

from sedna.embedded.apiserver.logs import FOLLOWING
from tests.apiserver.test_pod_logs import NS, Logs, logs  # noqa: F401  (fixture)
from tests.support.logs import capture_logs
from tests.support.waiting import wait_until


def test_a_follow_stream_ends_when_its_client_goes(logs: Logs) -> None:  # noqa: F811
    logs.pod("g")
    logs.write("g", "main", "one")
    before = FOLLOWING.count
    resp = logs.core.read_namespaced_pod_log(
        "g", NS, follow=True, _preload_content=False, _request_timeout=30
    )
    assert resp.read(4) == b"one\n"
    wait_until(lambda: FOLLOWING.count == before + 1, 5, "the follow stream to be served")
    resp.close()  # closes the connection (release_conn would keep it in the pool)
    # The pod is still running: only the client's going can end the stream.
    wait_until(lambda: FOLLOWING.count == before, 5, "the server to end the stream")
    for cap in capture_logs():
        logs.core.delete_namespaced_pod("g", NS)
        assert not cap.contains("Traceback")
