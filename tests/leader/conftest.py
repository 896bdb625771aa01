"""Electors on a FakeClock against the in-process API server, and a driver for them.

The driver moves virtual time only when every elector thread is quiescent (waiting
on the clock, or finished), so each check sees the result of a whole attempt.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import kubernetes
import pytest
from loguru import logger
from support.waiting import poll

from sedna.embedded.apiserver import APIServer
from sedna.embedded.apiserver.faults import FaultInjector
from sedna.runtime.clock import FakeClock
from sedna.runtime.config import LeaderElectionConfig
from sedna.runtime.kube import LEASES, KubeClient, ResourceClient
from sedna.runtime.leader import LeaderElector
from sedna.runtime.metrics import Metrics

LEASE = "sedna-gm"


class Harness:
    """Builds electors on one FakeClock and records their callbacks in virtual time."""

    def __init__(self, kube: KubeClient, namespace: str) -> None:
        self.kube = kube
        self.namespace = namespace
        self.clock = FakeClock(wall_start=datetime(2030, 1, 1, tzinfo=UTC))
        self.config = LeaderElectionConfig(enabled=True, leaseName=LEASE, leaseNamespace=namespace)
        self.electors: list[LeaderElector] = []
        self.events: list[tuple[str, str, float]] = []  # (identity, what, virtual time)
        self._lock = threading.Lock()

    @property
    def leases(self) -> ResourceClient:
        return self.kube.resource(LEASES)

    def lease(self) -> dict[str, Any]:
        return self.leases.get(self.namespace, LEASE)

    def elector(
        self,
        identity: str,
        *,
        metrics: Metrics | None = None,
        on_started: Callable[[], None] | None = None,
    ) -> LeaderElector:
        def record(what: str) -> Callable[[], None]:
            def callback() -> None:
                with self._lock:
                    self.events.append((identity, what, self.clock.now()))
                if what == "started" and on_started is not None:
                    on_started()

            return callback

        def new_leader(holder: str) -> None:
            with self._lock:
                self.events.append((identity, f"new:{holder}", self.clock.now()))

        elector = LeaderElector(
            self.kube,
            self.config,
            identity,
            clock=self.clock,
            on_started_leading=record("started"),
            on_stopped_leading=record("stopped"),
            on_new_leader=new_leader,
            metrics=metrics,
            rng=random.Random(identity),
        )
        self.electors.append(elector)
        return elector

    def of(self, identity: str) -> list[tuple[str, float]]:
        with self._lock:
            return [(what, t) for who, what, t in self.events if who == identity]

    def leaders(self) -> list[str]:
        return [e.identity for e in self.electors if e.is_leader]

    def settle(self, timeout: float = 30.0) -> None:
        """Wait (real time) until every live elector thread waits on the clock."""

        def settled() -> bool:
            alive = sum(1 for e in self.electors if e.running)
            return self.clock.waiter_count() >= alive

        poll(settled, timeout, interval=0.001, failure="elector threads did not settle")

    def drive(self, until: Callable[[], bool], *, step: float = 1.0, limit: float = 120.0) -> None:
        """Step virtual time, one quiescent check per step, until `until()` holds."""
        start = self.clock.now()
        while True:
            self.settle()
            if until():
                return
            if self.clock.now() - start >= limit:
                raise AssertionError(f"condition not reached within {limit} virtual seconds")
            self.clock.step(step)

    def stop_all(self) -> None:
        for elector in self.electors:
            elector.stop(timeout=5)


@pytest.fixture
def kube(api_client: kubernetes.client.ApiClient) -> KubeClient:
    return KubeClient(api_client)


@pytest.fixture
def harness(kube: KubeClient, namespace: str) -> Iterator[Harness]:
    h = Harness(kube, namespace)
    yield h
    h.stop_all()


@pytest.fixture
def faults(embedded_apiserver: APIServer) -> Iterator[FaultInjector]:
    """The server's fault injector, reset afterwards (the server is shared)."""
    yield embedded_apiserver.faults
    embedded_apiserver.faults.reset()


@pytest.fixture
def logs() -> Iterator[list[str]]:
    lines: list[str] = []
    sink_id = logger.add(lines.append, level="DEBUG", format="{level} {message}")
    yield lines
    logger.remove(sink_id)
