"""A stop while `FeatureHost.start` waits for the caches of an API server that is down."""

from __future__ import annotations

import socket
import threading

import kubernetes

from sedna.runtime import (
    MODELS,
    ControllerContext,
    Feature,
    FeatureHost,
    FeatureStartError,
    GMConfig,
)


class Idle:
    def __init__(self, ctx: ControllerContext) -> None:
        ctx.informers.informer(MODELS)
        self.started = False

    def start(self) -> None:
        self.started = True

    def stop(self) -> None:
        pass


def unreachable_client() -> kubernetes.client.ApiClient:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    cfg = kubernetes.client.Configuration()
    cfg.host = f"http://127.0.0.1:{port}"
    return kubernetes.client.ApiClient(cfg)


def test_request_stop_ends_the_cache_wait_and_run_returns() -> None:
    client = unreachable_client()
    host = FeatureHost(
        GMConfig.model_validate({"minResyncPeriodSeconds": 3600}),
        overrides={"api_client": client, "downstream": lambda *a: None},
        cache_sync_timeout=3600,  # only the stop can end the wait
    )
    host.add(Feature("idle", ["Model"], Idle))
    failure: list[BaseException] = []

    def run() -> None:
        try:
            host.run()
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(1.0)
    assert thread.is_alive()  # still waiting for the caches
    host.request_stop("test")
    thread.join(30)  # a hang guard, not a timing goal
    assert not thread.is_alive(), "run() did not return after request_stop"
    assert not failure, failure
    assert host.started is False
    assert host.features[0].controller is None  # built, never started, then stopped
    client.close()


def test_without_a_stop_the_timeout_still_fails_the_start() -> None:
    """The stop path leaves the timeout as it was: a sync that cannot finish is an error."""
    client = unreachable_client()
    host = FeatureHost(
        GMConfig.model_validate({"minResyncPeriodSeconds": 3600}),
        overrides={"api_client": client, "downstream": lambda *a: None},
        cache_sync_timeout=1,
    )
    host.add(Feature("idle", ["Model"], Idle))
    try:
        host.start()
    except FeatureStartError as exc:
        assert "did not sync within 1 s" in str(exc)
    else:
        raise AssertionError("start() succeeded without an API server")
    finally:
        client.close()
