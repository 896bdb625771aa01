"""The manager with leaderElection on: controllers run only while this replica leads."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers
from support.waiting import poll

from sedna.manager import Manager, StartupError
from sedna.runtime import ControllerContext, Feature, RuntimeContainer, hookimpl
from sedna.runtime.config import GMConfig
from sedna.runtime.kube import LEASES, Conflict, KubeClient, NotFound

LEASE = "sedna-gm"
# Real time here. The renew deadline bounds real HTTP round trips to the test process's
# own API server, so it must allow for a loaded machine: a leader that misses it steps
# down and the manager exits (the retry period keeps takeovers quick).
LEASE_DURATION = 4.0
RENEW_DEADLINE = 3.0


class FakeController:
    def __init__(self, ctx: ControllerContext) -> None:
        self.calls: list[str] = []
        ElectionPlugin.controllers.append(self)

    def start(self) -> None:
        self.calls.append("start")

    def stop(self) -> None:
        self.calls.append("stop")


class ElectionPlugin:
    controllers: list[FakeController] = []

    @hookimpl
    def sedna_features(self) -> list[Feature]:
        return [Feature("ledemo", ["Model"], FakeController)]

    @hookimpl
    def sedna_configure_container(self, container: RuntimeContainer) -> None:
        def send(node: str, event: str, obj: Mapping[str, Any]) -> None:
            pass

        container.downstream.override(providers.Object(send))  # no websocket server needed


def config(kubeconfig: Path, namespace: str, **election: Any) -> GMConfig:
    return GMConfig.model_validate(
        {
            "kubeConfig": str(kubeconfig),
            # probes only: /metrics is not read here
            "metrics": {"enabled": True, "address": "127.0.0.1", "port": 0, "auth": "none"},
            "minResyncPeriodSeconds": 300,
            "leaderElection": {
                "enabled": True,
                "leaseName": LEASE,
                "leaseNamespace": namespace,
                "leaseDurationSeconds": LEASE_DURATION,
                "renewDeadlineSeconds": RENEW_DEADLINE,
                "retryPeriodSeconds": 0.05,
                **election,
            },
        }
    )


def eventually(check: Callable[[], bool], timeout: float = 10.0) -> None:
    poll(check, timeout, interval=0.01, failure="condition not reached")


@pytest.fixture
def kubeconfig(apiserver: Any, tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    apiserver.write_kubeconfig(path)
    return path


@pytest.fixture
def plugin() -> ElectionPlugin:
    ElectionPlugin.controllers = []
    return ElectionPlugin()


def hold_lease(kube: KubeClient, namespace: str, holder: str) -> None:
    """Write the Lease as another replica would, with an hour-long duration."""
    leases = kube.resource(LEASES)
    spec = {
        "holderIdentity": holder,
        "leaseDurationSeconds": 3600,
        "renewTime": "2030-01-01T00:00:00.000000Z",
        "acquireTime": "2030-01-01T00:00:00.000000Z",
        "leaseTransitions": 0,
    }
    body: dict[str, Any] = {"metadata": {"name": LEASE, "namespace": namespace}, "spec": spec}
    for _ in range(50):  # the leader renews concurrently: retry on 409
        try:
            current = leases.get(namespace, LEASE)
        except NotFound:
            leases.create(namespace, body)
            return
        spec["leaseTransitions"] = current["spec"].get("leaseTransitions", 0) + 1
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        try:
            leases.replace(namespace, LEASE, body)
            return
        except Conflict:
            continue
    raise AssertionError("could not overwrite the Lease")


def test_controllers_start_only_when_leading_and_stop_on_lost_lease(
    kubeconfig: Path, namespace: str, plugin: ElectionPlugin, api_client: Any
) -> None:
    kube = KubeClient(api_client)
    hold_lease(kube, namespace, "other-replica")
    manager = Manager(
        config(kubeconfig, namespace), extra_plugins={"ledemo": plugin}, use_entry_points=False
    )
    runner = threading.Thread(target=manager.run, daemon=True)
    runner.start()
    try:
        eventually(lambda: manager.elector is not None and manager.elector.leader != "")
        elector = manager.elector
        assert elector is not None
        # Standby: health served, but no feature built, no edge server, not ready.
        assert elector.leader == "other-replica" and not elector.is_leader
        assert plugin.controllers == []
        assert manager.health is not None
        ready, text = manager.health.report("readyz")
        assert not ready and "[-]active failed" in text  # LCs are routed to the leader only
        live, text = manager.health.report("healthz")
        assert live and "leader-election ok" in text
        registry = manager.container.metrics().registry
        assert registry.get_sample_value("leader_election_is_leader") == 0

        # The other replica releases: this one takes over and starts the controller.
        leases = kube.resource(LEASES)
        current = leases.get(namespace, LEASE)
        current["spec"]["holderIdentity"] = ""
        leases.replace(namespace, LEASE, current)
        eventually(lambda: [c.calls for c in plugin.controllers] == [["start"]])
        (controller,) = plugin.controllers
        eventually(lambda: manager.health is not None and manager.health.report("readyz")[0])
        assert elector.is_leader
        assert leases.get(namespace, LEASE)["spec"]["holderIdentity"] == elector.identity
        assert registry.get_sample_value("leader_election_is_leader") == 1

        # Someone else takes the Lease: renewals fail, the manager stops itself.
        hold_lease(kube, namespace, "usurper")
        runner.join(timeout=RENEW_DEADLINE + 30)
        assert not runner.is_alive(), "manager did not stop after losing the lease"
        assert controller.calls == ["start", "stop"]
        assert registry.get_sample_value("leader_election_is_leader") == 0
        assert leases.get(namespace, LEASE)["spec"]["holderIdentity"] == "usurper"
    finally:
        manager.request_stop("test over")
        runner.join(timeout=10)


def test_clean_stop_releases_the_lease(
    kubeconfig: Path, namespace: str, plugin: ElectionPlugin, api_client: Any
) -> None:
    manager = Manager(
        config(kubeconfig, namespace), extra_plugins={"ledemo": plugin}, use_entry_points=False
    )
    manager.start()
    try:
        # No Lease yet: created at once, and the feature is built and started.
        eventually(lambda: [c.calls for c in plugin.controllers] == [["start"]])
    finally:
        manager.stop()
    (controller,) = plugin.controllers
    assert controller.calls == ["start", "stop"]
    spec = KubeClient(api_client).resource(LEASES).get(namespace, LEASE)["spec"]
    assert spec["holderIdentity"] == ""  # a standby may take over at its next retry


def test_inconsistent_election_timings_fail_startup(
    kubeconfig: Path, namespace: str, plugin: ElectionPlugin
) -> None:
    manager = Manager(
        config(kubeconfig, namespace, renewDeadlineSeconds=LEASE_DURATION + 1),
        extra_plugins={"ledemo": plugin},
        use_entry_points=False,
    )
    with pytest.raises(StartupError, match="leaseDurationSeconds"):
        manager.start()
