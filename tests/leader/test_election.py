"""LeaderElector against the in-process API server, in virtual time."""

from __future__ import annotations

import re
import threading
from datetime import timedelta
from typing import Any

import pytest
from support.waiting import wait_until

from sedna.embedded.apiserver.faults import FaultInjector
from sedna.runtime.config import LeaderElectionConfig
from sedna.runtime.kube import KubeClient, NotFound
from sedna.runtime.leader import LeaderElector, format_micro_time, parse_lease
from sedna.runtime.metrics import Metrics

from .conftest import LEASE, Harness

MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
# Defaults: leaseDuration 15, renewDeadline 10, retryPeriod 2 (jitter up to 2.2 x).
MAX_RETRY_WAIT = 2 * 2.2


def gauge(metrics: Metrics) -> float:
    value = metrics.registry.get_sample_value("leader_election_is_leader")
    assert value is not None
    return value


def put_lease(h: Harness, spec: dict[str, Any]) -> dict[str, Any]:
    """Create or overwrite the Lease with `spec`, as another process would."""
    body = {"metadata": {"name": LEASE, "namespace": h.namespace}, "spec": spec}
    try:
        current = h.lease()
    except NotFound:
        return h.leases.create(h.namespace, body)
    body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    return h.leases.replace(h.namespace, LEASE, body)


def dead_spec(h: Harness, transitions: int = 3) -> dict[str, Any]:
    long_ago = format_micro_time(h.clock.wall() - timedelta(hours=1))
    return {
        "holderIdentity": "dead",
        "leaseDurationSeconds": 15,
        "acquireTime": long_ago,
        "renewTime": long_ago,
        "leaseTransitions": transitions,
    }


def test_two_electors_exactly_one_leads(harness: Harness) -> None:
    a, b = harness.elector("a"), harness.elector("b")
    a.run()
    b.run()
    harness.settle()
    leaders = harness.leaders()
    assert len(leaders) == 1
    first = leaders[0]
    for _ in range(40):  # 40 virtual seconds: many renewals and standby retries
        harness.clock.step(1)
        harness.settle()
        assert harness.leaders() == [first]
    spec = harness.lease()["spec"]
    assert spec["holderIdentity"] == first
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert MICRO_TIME.match(spec["renewTime"]) and MICRO_TIME.match(spec["acquireTime"])
    assert spec["renewTime"] > spec["acquireTime"]  # renewed, acquisition kept
    starts = [e for e in harness.events if e[1] == "started"]
    assert [s[0] for s in starts] == [first]
    other = "b" if first == "a" else "a"
    assert ("new:" + first) in [what for what, _ in harness.of(other)]


def test_stop_releases_and_standby_takes_over_promptly(harness: Harness) -> None:
    metrics = Metrics()
    a = harness.elector("a", metrics=metrics)
    a.run()
    harness.settle()
    assert a.is_leader and gauge(metrics) == 1
    b = harness.elector("b")
    b.run()
    harness.settle()
    assert not b.is_leader and b.leader == "a"

    a.stop()
    assert not a.is_leader and gauge(metrics) == 0
    assert [w for w, _ in harness.of("a")] == ["new:a", "started", "stopped"]
    released = harness.lease()["spec"]
    assert released["holderIdentity"] == ""
    assert released["leaseTransitions"] == 0

    released_at = harness.clock.now()
    harness.drive(lambda: b.is_leader, step=0.5)
    assert harness.clock.now() - released_at <= MAX_RETRY_WAIT  # not a lease duration
    spec = harness.lease()["spec"]
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 1


def test_leader_that_cannot_renew_steps_down_after_renew_deadline(
    harness: Harness, faults: FaultInjector
) -> None:
    metrics = Metrics()
    a = harness.elector("a", metrics=metrics)
    a.run()
    harness.settle()
    assert a.is_leader
    last_renewal = harness.clock.now()
    faults.fail(500, verbs=["get", "update"], resources=["leases"])

    harness.drive(lambda: not a.is_leader, step=0.5)
    stopped = [t for what, t in harness.of("a") if what == "stopped"]
    assert len(stopped) == 1
    # The round that failed began one retry period after the last renewal.
    assert 10 <= stopped[0] - last_renewal <= 2 + 10
    assert stopped[0] - last_renewal < 15  # stepped down before anyone may take over
    assert gauge(metrics) == 0
    assert not a.running  # the election ended; the owner exits, as client-go's do
    faults.reset()
    assert harness.lease()["spec"]["holderIdentity"] == "a"  # lost, so not released


def test_expired_lease_of_dead_holder_is_taken_over(harness: Harness) -> None:
    put_lease(harness, dead_spec(harness, transitions=3))
    a = harness.elector("a")
    a.run()
    harness.settle()
    # renewTime is an hour old, but expiry is observed on our clock: wait a lease duration.
    assert not a.is_leader and a.leader == "dead"
    harness.drive(lambda: a.is_leader, step=0.5)
    started = [t for what, t in harness.of("a") if what == "started"]
    assert 15 <= started[0] <= 15 + MAX_RETRY_WAIT
    spec = harness.lease()["spec"]
    assert spec["holderIdentity"] == "a"
    assert spec["leaseTransitions"] == 4
    assert spec["acquireTime"] == spec["renewTime"]
    assert MICRO_TIME.match(spec["acquireTime"])
    assert [w for w, _ in harness.of("a")][:2] == ["new:dead", "new:a"]


def test_a_renewing_holder_is_never_taken_over(harness: Harness) -> None:
    put_lease(harness, dead_spec(harness))
    a = harness.elector("a")
    a.run()
    for _ in range(30):  # the other holder changes its record every 5 virtual seconds
        harness.clock.step(5)
        spec = dead_spec(harness)
        spec["renewTime"] = format_micro_time(harness.clock.wall())
        put_lease(harness, spec)
        harness.settle()
        assert not a.is_leader


def test_racing_candidates_one_wins_the_other_gets_409(
    harness: Harness, faults: FaultInjector, logs: list[str]
) -> None:
    put_lease(harness, dead_spec(harness, transitions=7))
    a, b = harness.elector("a"), harness.elector("b")
    a.run()
    b.run()
    harness.settle()
    assert harness.leaders() == []
    # Both wake in one step after expiry and read the same resourceVersion; the PUTs are
    # held 0.3 s by the server so both are in flight: exactly one may succeed.
    faults.add_latency(0.3, verbs=("update",))
    harness.clock.step(20)
    harness.settle()
    faults.reset()
    assert len(harness.leaders()) == 1
    assert any("lost the race" in line for line in logs)
    assert harness.lease()["spec"]["leaseTransitions"] == 8
    winner = harness.leaders()
    for _ in range(20):
        harness.clock.step(1)
        harness.settle()
        assert harness.leaders() == winner


def test_leader_whose_lease_is_overwritten_steps_down(harness: Harness, logs: list[str]) -> None:
    a = harness.elector("a")
    a.run()
    harness.settle()
    assert a.is_leader
    intruder = dead_spec(harness)
    intruder["holderIdentity"] = "intruder"
    put_lease(harness, intruder)  # a's cached resourceVersion is now stale: its PUT gets 409
    harness.drive(lambda: not a.is_leader, step=0.5)
    assert any("optimistic renew" in line and "409" in line for line in logs)
    assert harness.lease()["spec"]["holderIdentity"] == "intruder"
    assert "new:intruder" in [w for w, _ in harness.of("a")]


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ({"leaseDurationSeconds": 15, "leaseTransitions": 2}, "holderIdentity is missing"),
        (
            {
                "holderIdentity": "someone",
                "leaseDurationSeconds": 15,
                "renewTime": "yesterday",
                "leaseTransitions": 2,
            },
            "renewTime",
        ),
        (
            {"holderIdentity": "someone", "renewTime": "2030-01-01T00:00:00.000000Z"},
            "leaseDurationSeconds",
        ),
    ],
    ids=["no-holder", "bad-renew-time", "no-duration"],
)
def test_malformed_lease_is_expired_with_a_warning(
    harness: Harness, faults: FaultInjector, logs: list[str], spec: dict[str, Any], problem: str
) -> None:
    # `faults` only to skip on a real cluster, whose validation rejects such Leases.
    put_lease(harness, spec)
    a = harness.elector("a")
    a.run()
    harness.settle()
    assert a.is_leader  # at the first attempt, no lease duration waited
    warnings = [line for line in logs if line.startswith("WARNING") and "malformed" in line]
    assert len(warnings) == 1 and problem in warnings[0]
    fixed = harness.lease()["spec"]
    assert fixed["holderIdentity"] == "a"
    assert fixed["leaseTransitions"] == spec.get("leaseTransitions", 0) + 1
    assert parse_lease({"spec": fixed}).problem == ""


def test_stuck_leader_fails_liveness(harness: Harness) -> None:
    release = threading.Event()

    def stuck() -> None:  # a callback that does not return: the renew loop is stuck
        release.wait()

    a = harness.elector("a", on_started=stuck)
    a.run()
    try:
        # Real time: the thread ends up inside the callback, not on the clock.
        wait_until(lambda: a.is_leader, timeout=30, what="a to lead")
        assert a.is_leader and a.check()
        harness.clock.step(15 + 20 + 1)
        assert not a.check()
    finally:
        release.set()


def test_parse_lease_reports_problems() -> None:
    assert parse_lease({}).problem == "spec is missing"
    good = parse_lease(
        {
            "spec": {
                "holderIdentity": "x",
                "leaseDurationSeconds": 15,
                "renewTime": "2030-01-01T00:00:00.123456Z",
                "acquireTime": "2030-01-01T00:00:00.123456Z",
                "leaseTransitions": 1,
            }
        }
    )
    assert good.problem == "" and good.holder == "x" and good.transitions == 1
    released = parse_lease({"spec": {"holderIdentity": "", "leaseDurationSeconds": 1}})
    assert released.problem == "" and released.holder == ""
    bad = parse_lease({"spec": {"holderIdentity": 5, "leaseTransitions": -1}})
    assert "holderIdentity" in bad.problem and "leaseTransitions" in bad.problem


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"leaseDurationSeconds": 10, "renewDeadlineSeconds": 10}, "leaseDurationSeconds"),
        ({"renewDeadlineSeconds": 2, "retryPeriodSeconds": 2}, "renewDeadlineSeconds"),
    ],
)
def test_inconsistent_timings_are_rejected(
    kube: KubeClient, values: dict[str, float], message: str
) -> None:
    config = LeaderElectionConfig.model_validate(values)
    with pytest.raises(ValueError, match=message):
        LeaderElector(kube, config, "x", on_started_leading=print, on_stopped_leading=print)


def test_default_identity_is_unique(kube: KubeClient) -> None:
    def make() -> LeaderElector:
        return LeaderElector(
            kube, LeaderElectionConfig(), on_started_leading=print, on_stopped_leading=print
        )

    one, two = make(), make()
    assert one.identity != two.identity and "_" in one.identity
    one.stop()  # never run: nothing to release, returns at once
    assert one.release()
