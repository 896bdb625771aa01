"""FeatureHost: features on the runtime from `sedna.runtime` alone, started and stopped in order."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import kubernetes
import pytest
from pydantic import BaseModel, ConfigDict

from sedna.runtime import (
    MODELS,
    ControllerContext,
    Feature,
    FeatureHost,
    FeatureOptionsError,
    FeatureStartError,
    GMConfig,
    UpstreamMessage,
    validate_feature_options,
)
from sedna.testing import api_client_for

ORDER: list[str] = []


class Options(BaseModel):
    model_config = ConfigDict(extra="forbid")
    interval: int = 5


class Probe:
    """Records what it saw of its context when the host started it."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.informer = ctx.informers.informer(MODELS)
        ctx.upstream.register("probe", self.report)
        self.synced_at_start: bool | None = None
        ORDER.append("built")

    def report(self, msg: UpstreamMessage) -> None:
        pass

    def start(self) -> None:
        self.synced_at_start = self.informer.has_synced()
        ORDER.append("start")

    def stop(self) -> None:
        ORDER.append(f"stop:informer-running={self.informer.has_synced()}")


def probe_feature(**kw: Any) -> Feature:
    def validate(options: Mapping[str, Any]) -> Options:
        return Options.model_validate(options)

    return Feature("probe", ["Model"], Probe, validate_options=validate, **kw)


def config() -> GMConfig:
    return GMConfig.model_validate({"minResyncPeriodSeconds": 3600})


@pytest.fixture
def gm_client(apiserver: Any) -> Iterator[kubernetes.client.ApiClient]:
    """A client of the GM's own: the GM's KubeClient marks it with the GM's User-Agent."""
    client = api_client_for(apiserver)
    yield client
    client.close()


def host_for(gm_client: kubernetes.client.ApiClient, **overrides: object) -> FeatureHost:
    sent: list[tuple[str, str]] = []
    return FeatureHost(
        config(),
        overrides={
            "api_client": gm_client,
            "downstream": lambda node, event, obj: sent.append((node, event)),
            **overrides,
        },
    )


def test_a_ready_context_and_an_orderly_stop(gm_client: kubernetes.client.ApiClient) -> None:
    ORDER.clear()
    host = host_for(gm_client)
    ctx = host.add(probe_feature(), {"interval": 7}, workers=3)
    assert (ctx.feature_name, ctx.options.interval, ctx.workers) == ("probe", 7, 3)
    with host:
        probe = host.controller("probe")
        assert isinstance(probe, Probe)
        assert probe.synced_at_start is True  # informers synced before the controllers ran
        assert "probe" in ctx.upstream.kinds()
        assert not host.uses_message_layer  # downstream overridden: nothing listens
    assert ORDER == ["built", "start", "stop:informer-running=True"]  # informers outlive it


def test_options_are_validated_naming_the_key(gm_client: kubernetes.client.ApiClient) -> None:
    host = host_for(gm_client)
    with pytest.raises(FeatureOptionsError) as err:
        host.add(probe_feature(), {"interval": "often"})
    assert err.value.key == "interval"
    assert "expected an integer" in err.value.reason
    plain = Feature("plain", ["Model"], Probe)
    with pytest.raises(FeatureOptionsError, match="x: unknown option"):
        validate_feature_options(plain, {"x": 1})


def test_unknown_override_names_the_providers() -> None:
    with pytest.raises(ValueError, match="no provider 'downstreem' to override"):
        FeatureHost(config(), overrides={"downstreem": print})


def test_a_failing_factory_stops_what_started(gm_client: kubernetes.client.ApiClient) -> None:
    def broken(ctx: ControllerContext) -> Any:
        raise RuntimeError("no bucket")

    host = host_for(gm_client)
    host.add(probe_feature())
    host.add(Feature("broken", ["Dataset"], broken))
    with pytest.raises(FeatureStartError, match="feature broken failed to start: RuntimeError"):
        host.start()
    assert host.features[0].controller is None


class NoStart:
    def __init__(self, ctx: ControllerContext) -> None:
        self.stopped = False

    def start(self) -> None:
        raise OSError("no port")

    def stop(self) -> None:
        self.stopped = True


def test_a_failing_controller_start_names_the_feature(
    gm_client: kubernetes.client.ApiClient,
) -> None:
    ORDER.clear()
    host = host_for(gm_client)
    host.add(probe_feature())
    host.add(Feature("nostart", ["Dataset"], NoStart), plugin="nostart-plugin")
    with pytest.raises(FeatureStartError) as err:
        host.start()
    assert str(err.value) == (
        "plugin nostart-plugin: feature nostart failed to start: OSError: no port"
    )
    assert ORDER == ["built", "start", "stop:informer-running=True"]  # what started stopped
    assert all(f.controller is None for f in host.features)


def test_a_stop_requested_before_run_is_kept(gm_client: kubernetes.client.ApiClient) -> None:
    host = host_for(gm_client)
    host.add(probe_feature())
    host.request_stop("signal before start")
    host.run()  # returns at once instead of blocking


def test_on_built_sees_every_feature_before_the_informers_start(
    gm_client: kubernetes.client.ApiClient,
) -> None:
    seen: list[tuple[str, bool]] = []

    def built(features: Any) -> None:
        for f in features:
            seen.append((f.name, f.controller.informer.is_started))

    host = FeatureHost(
        config(),
        overrides={"api_client": gm_client, "downstream": lambda *a: None},
        on_built=built,
    )
    host.add(probe_feature())
    with host:
        pass
    assert seen == [("probe", False)]
