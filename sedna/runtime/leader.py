"""Leader election on a `coordination.k8s.io/v1` Lease, with client-go's semantics.

Several GM replicas may run; only the one holding the Lease runs the feature
controllers, so two replicas never create pods for the same job. The rules are
those of client-go's `tools/leaderelection` (re-implemented, not translated):

- **Expiry is observed locally.** A candidate never compares the holder's
  `renewTime` with its own wall clock (the two machines' clocks may disagree).
  It remembers, on its own monotonic clock, when it last saw the Lease's record
  *change*; the Lease is free once `leaseDurationSeconds` passed since then with
  no change. A healthy leader changes `renewTime` every `retryPeriod`, so
  candidates keep seeing changes and keep waiting. The price, as in client-go: a
  candidate that starts next to a long-dead lease still waits one lease duration.
- **Optimistic concurrency.** Every write is a PUT carrying the
  `resourceVersion` that was read; of two candidates racing for an expired
  Lease, the API server lets one win and answers the other 409, which is just
  "lost the race, try again later". Nobody ever believes it leads without a
  successful write.
- **Renew or step down.** The leader renews every `retryPeriod`; a renewal
  round that has not succeeded within `renewDeadline` ends leadership
  (`on_stopped_leading`). `renewDeadline < leaseDuration` is what makes this
  safe: the old leader stops acting before any candidate can see the Lease as
  expired. Each request is given at most the time left in the round, so a hung
  connection cannot stretch the leader past its deadline.
- **Release on clean stop** (client-go's `ReleaseOnCancel`). `stop()` clears
  `holderIdentity` (and sets `leaseDurationSeconds` to 1), so a standby takes
  over at its next retry instead of waiting a whole lease duration. The owner
  must have stopped the guarded work first (the manager stops the controllers,
  then the elector). A leader that *lost* the lease does not release: its
  controllers are still running at that moment, and handing the Lease over
  early would make two leaders.
- **Jittered retries.** Candidates retry every `retryPeriod * (1 + 1.2 * rand)`
  so replicas started together do not hammer the server in lockstep.

Deliberate differences from client-go:

- `on_stopped_leading` is called only if this elector actually led (client-go
  calls it even when the election was cancelled before it ever acquired).
- Callbacks run synchronously on the elector's thread, in order (started,
  then stopped); they must return promptly and start threads for long work.
  client-go runs `OnStartedLeading` in a goroutine because it receives the
  blocking "run the controllers" function; ours receives a non-blocking start.
- `on_new_leader` is not called for an empty holder (a released Lease).
- A malformed Lease (no `holderIdentity`, no or non-positive
  `leaseDurationSeconds`, an unparsable `renewTime`) is treated as expired,
  with one warning per distinct record, instead of failing every attempt.
  client-go cannot decode such a Lease at all and so could never take it over.
- `leaseDurationSeconds` in the Lease is an integer (the API's type); a
  fractional configured duration is rounded up when written.

`check()` is client-go's `HealthzAdaptor`: a liveness signal that turns false
when this elector believes it leads but has not renewed for longer than the
lease duration plus a tolerance, i.e. its renew loop is stuck.
"""

from __future__ import annotations

import copy
import math
import random
import socket
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from loguru import logger

from sedna.runtime.clock import Clock, RealClock
from sedna.runtime.config import LeaderElectionConfig
from sedna.runtime.kube import LEASES, ApiError, Conflict, KubeClient, NotFound
from sedna.runtime.metrics import Metrics

__all__ = [
    "JITTER_FACTOR",
    "LeaderElector",
    "LeaseRecord",
    "default_identity",
    "format_micro_time",
    "parse_lease",
]

JITTER_FACTOR = 1.2
"""client-go's `leaderelection.JitterFactor`: retries wait retryPeriod * [1, 2.2)."""

_UNSEEN = object()

DEFAULT_HEALTH_TOLERANCE = 20.0
"""Seconds past the lease duration before `check()` reports a stuck leader (as kube's
controller managers configure the healthz adaptor)."""


def default_identity() -> str:
    """Hostname plus a random suffix, so two processes on one host never share an identity."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def format_micro_time(when: datetime) -> str:
    """A Kubernetes MicroTime: RFC 3339 in UTC with exactly six fractional digits."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or "T" not in value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


@dataclass(frozen=True)
class LeaseRecord:
    """The election state a Lease's spec holds; `problem` is set when it is malformed."""

    holder: str
    lease_duration: int
    acquire_time: str | None
    renew_time: str | None
    transitions: int
    problem: str = ""


def parse_lease(lease: Mapping[str, Any]) -> LeaseRecord:
    """Read the election record; never raises, malformed records name their problem.

    A released Lease (`holderIdentity: ""`) is well formed; a Lease without the
    key was not written by an elector and is reported.
    """
    spec = lease.get("spec")
    if not isinstance(spec, Mapping):
        return LeaseRecord("", 0, None, None, 0, "spec is missing")
    problems: list[str] = []
    holder = spec.get("holderIdentity")
    if holder is None:
        problems.append("holderIdentity is missing")
        holder = ""
    elif not isinstance(holder, str):
        problems.append(f"holderIdentity is not a string: {holder!r}")
        holder = ""
    duration = spec.get("leaseDurationSeconds")
    if isinstance(duration, bool) or not isinstance(duration, int) or duration <= 0:
        if holder:
            problems.append(f"leaseDurationSeconds is not a positive integer: {duration!r}")
        duration = 0
    renew = spec.get("renewTime")
    if holder and _parse_time(renew) is None:
        problems.append(f"renewTime is not an RFC 3339 time: {renew!r}")
    acquire = spec.get("acquireTime")
    transitions = spec.get("leaseTransitions", 0)
    if isinstance(transitions, bool) or not isinstance(transitions, int) or transitions < 0:
        problems.append(f"leaseTransitions is not a non-negative integer: {transitions!r}")
        transitions = 0
    return LeaseRecord(
        holder=holder,
        lease_duration=duration,
        acquire_time=acquire if _parse_time(acquire) is not None else None,
        renew_time=renew if isinstance(renew, str) else None,
        transitions=transitions,
        problem="; ".join(problems),
    )


class LeaderElector:
    """Campaigns for one Lease on a thread of its own; `run()` starts, `stop()` ends.

    One elector per process and Lease; it is not restartable after `stop()`
    (create a new one, as client-go's elector is not reusable either).
    """

    def __init__(
        self,
        kube: KubeClient,
        config: LeaderElectionConfig,
        identity: str | None = None,
        *,
        clock: Clock | None = None,
        on_started_leading: Callable[[], None],
        on_stopped_leading: Callable[[], None],
        on_new_leader: Callable[[str], None] | None = None,
        metrics: Metrics | None = None,
        rng: random.Random | None = None,
        health_tolerance: float = DEFAULT_HEALTH_TOLERANCE,
    ) -> None:
        _validate(config)
        identity = default_identity() if identity is None else identity
        if not identity:
            raise ValueError("leader election identity must not be empty")
        self.identity = identity
        self.config = config
        self._kube = kube
        self._clock: Clock = clock if clock is not None else RealClock()
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._on_new_leader = on_new_leader
        self._metrics = metrics
        self._rng = rng if rng is not None else random.Random()
        self._tolerance = health_tolerance
        self._namespace = config.leaseNamespace
        self._name = config.leaseName
        self._path = LEASES.path(self._namespace, self._name)
        self._duration = config.leaseDurationSeconds
        self._renew_deadline = config.renewDeadlineSeconds
        self._retry = config.retryPeriodSeconds
        self._written_duration = max(1, math.ceil(self._duration))

        # Guarded by _io: what we last saw of the Lease and when (our clock).
        self._io = threading.Lock()
        self._lease: dict[str, Any] | None = None
        self._record = LeaseRecord("", 0, None, None, 0)
        self._raw_spec: Any = _UNSEEN
        self._observed_at = self._clock.now()
        self._warned_spec: Any = None
        self._reported_leader = ""

        self._cond = threading.Condition()
        self._stopping = False
        self._leading = False
        self._thread: threading.Thread | None = None

    # -- public ------------------------------------------------------------------

    @property
    def description(self) -> str:
        """`namespace/name` of the Lease, for logs."""
        return f"{self._namespace}/{self._name}"

    @property
    def is_leader(self) -> bool:
        """True between a successful acquisition and the end of leadership."""
        return self._leading

    @property
    def leader(self) -> str:
        """The holder last observed in the Lease ("" when none); informational only."""
        return self._record.holder  # one reference read: no lock, never blocks on I/O

    @property
    def running(self) -> bool:
        """Whether the election thread is alive (it ends on `stop()` or after stepping down)."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    def run(self) -> None:
        """Start campaigning on a daemon thread; returns at once."""
        with self._cond:
            if self._thread is not None or self._stopping:
                return
            self._thread = threading.Thread(
                target=self._main, name=f"leader-election-{self._name}", daemon=True
            )
            self._thread.start()

    def stop(self, timeout: float | None = 10.0) -> None:
        """End the election and, if this elector led, release the Lease.

        Call it after the work the Lease guards has stopped: the release lets a
        standby take over immediately.
        """
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            if thread.is_alive():
                logger.warning(
                    "leader election for {} did not stop within {} s", self.description, timeout
                )
        self.release()

    def release(self) -> bool:
        """Clear `holderIdentity` if the last record we saw is ours; True if nothing is held.

        Keeps `leaseTransitions` (the next holder increments it) and writes
        `leaseDurationSeconds: 1`, as client-go does, for readers that still
        judge by duration.
        """
        with self._io:
            if self._record.holder != self.identity or self._lease is None:
                return True
            now = format_micro_time(self._clock.wall())
            body = self._with_spec(
                self._lease,
                holder="",
                duration=1,
                acquire_time=now,
                renew_time=now,
                transitions=self._record.transitions,
            )
            try:
                written = self._request("PUT", body, self._renew_deadline)
            except Conflict:
                logger.info("lease {} changed before release; not ours anymore", self.description)
                return False
            except ApiError as exc:
                logger.warning("could not release lease {}: {}", self.description, exc)
                return False
            self._observe(written)
        logger.info("released lease {}", self.description)
        return True

    def check(self) -> bool:
        """Liveness: False only when we lead but have not renewed for too long (stuck)."""
        if not self._leading:
            return True
        # No lock: a probe must not wait behind a request in flight.
        return self._clock.now() - self._observed_at <= self._duration + self._tolerance

    # -- the loop ----------------------------------------------------------------

    def _main(self) -> None:
        try:
            if self._acquire():
                self._lead()
        except BaseException:  # the thread must not die silently
            logger.exception("leader election for {} failed", self.description)
            if self._leading:
                self._step_down()

    def _acquire(self) -> bool:
        logger.info("attempting to acquire leader lease {}...", self.description)
        while not self._stopped():
            ok = self._try_acquire_or_renew(self._renew_deadline, None)
            self._maybe_report_transition()
            if ok:
                return True
            jittered = self._retry * (1.0 + self._rng.random() * JITTER_FACTOR)
            self._wait_until(self._clock.now() + jittered)
        return False

    def _lead(self) -> None:
        self._leading = True
        if self._metrics is not None:
            self._metrics.leader.set(1)
        logger.info("successfully acquired lease {} as {}", self.description, self.identity)
        self._call(self._on_started, "on_started_leading")
        while not self._stopped():
            deadline = self._clock.now() + self._renew_deadline
            renewed = False
            while not self._stopped():
                if self._try_acquire_or_renew(self._renew_deadline, deadline):
                    renewed = True
                    break
                now = self._clock.now()
                if now >= deadline:
                    break
                self._wait_until(min(now + self._retry, deadline))
                if self._clock.now() >= deadline:
                    break
            self._maybe_report_transition()
            if not renewed:
                if not self._stopped():
                    logger.warning(
                        "failed to renew lease {} within {} s: stepping down",
                        self.description,
                        self._renew_deadline,
                    )
                break
            self._wait_until(self._clock.now() + self._retry)
        self._step_down()

    def _step_down(self) -> None:
        self._leading = False
        if self._metrics is not None:
            self._metrics.leader.set(0)
        logger.info("stopped leading lease {}", self.description)
        self._call(self._on_stopped, "on_stopped_leading")

    # -- one attempt -------------------------------------------------------------

    def _try_acquire_or_renew(self, budget: float, deadline: float | None) -> bool:
        """One client-go `tryAcquireOrRenew`: fast-path renew, else read, judge, write."""
        with self._io:
            try:
                return self._attempt(budget, deadline)
            except Exception:  # a surprise must cost one attempt, not the election thread
                logger.exception("leader election attempt on {} failed", self.description)
                return False

    def _attempt(self, budget: float, deadline: float | None) -> bool:
        now = self._clock.now()
        stamp = format_micro_time(self._clock.wall())

        def timeout() -> float:
            # Never let a request outlive the renew round (real seconds, floor 0.1).
            if deadline is None:
                return budget
            return max(0.1, min(budget, deadline - self._clock.now()))

        # 1. Fast path: we hold it and our copy is current; one PUT.
        if self._record.holder == self.identity and self._lease is not None and self._valid(now):
            body = self._with_spec(
                self._lease,
                holder=self.identity,
                duration=self._written_duration,
                acquire_time=self._record.acquire_time or stamp,
                renew_time=stamp,
                transitions=self._record.transitions,
            )
            try:
                self._observe(self._request("PUT", body, timeout()))
                return True
            except ApiError as exc:
                logger.info("optimistic renew of {} failed ({}); reading it", self.description, exc)

        # 2. Read, or create when absent.
        try:
            current = self._request("GET", None, timeout())
        except NotFound:
            body = {
                "apiVersion": LEASES.api_version,
                "kind": LEASES.kind,
                "metadata": {"name": self._name, "namespace": self._namespace},
                "spec": {
                    "holderIdentity": self.identity,
                    "leaseDurationSeconds": self._written_duration,
                    "acquireTime": stamp,
                    "renewTime": stamp,
                    "leaseTransitions": 0,
                },
            }
            try:
                created = self._request("POST", body, timeout())
            except ApiError as exc:
                logger.info("could not create lease {}: {}", self.description, exc)
                return False
            self._observe(created)
            return True
        except ApiError as exc:
            logger.warning("could not read lease {}: {}", self.description, exc)
            return False

        # 3. Judge: record changed -> restart the expiry clock.
        self._lease = current
        spec = current.get("spec")
        if spec != self._raw_spec:
            self._raw_spec = copy.deepcopy(spec)
            self._record = parse_lease(current)
            self._observed_at = now
            if self._record.problem and spec != self._warned_spec:
                self._warned_spec = copy.deepcopy(spec)
                logger.warning(
                    "lease {} is malformed ({}); treating it as expired",
                    self.description,
                    self._record.problem,
                )
        record = self._record
        ours = record.holder == self.identity
        if record.holder and not ours and self._valid(now):
            return False

        # 4. Write: keep acquireTime and transitions when renewing, else take over.
        body = self._with_spec(
            current,
            holder=self.identity,
            duration=self._written_duration,
            acquire_time=(record.acquire_time or stamp) if ours else stamp,
            renew_time=stamp,
            transitions=record.transitions if ours else record.transitions + 1,
        )
        try:
            written = self._request("PUT", body, timeout())
        except Conflict:
            logger.info("lost the race for lease {} (409); will retry", self.description)
            return False
        except ApiError as exc:
            logger.warning("could not update lease {}: {}", self.description, exc)
            return False
        if not ours:
            previous = record.holder or "nobody"
            logger.info("took over lease {} from {}", self.description, previous)
        self._observe(written)
        return True

    def _valid(self, now: float) -> bool:
        """Held and not expired by our own observation; malformed records never are."""
        if self._record.problem:
            return False
        return self._observed_at + self._record.lease_duration > now

    def _observe(self, lease: dict[str, Any]) -> None:
        """Remember a Lease we wrote (or read): a change seen now, on our clock."""
        self._lease = lease
        self._raw_spec = copy.deepcopy(lease.get("spec"))
        self._record = parse_lease(lease)
        self._observed_at = self._clock.now()

    def _with_spec(
        self,
        lease: Mapping[str, Any],
        *,
        holder: str,
        duration: int,
        acquire_time: str,
        renew_time: str,
        transitions: int,
    ) -> dict[str, Any]:
        """The Lease to PUT: its metadata (resourceVersion: compare-and-swap), our record.

        Spec fields we do not own (strategy, preferredHolder) are kept.
        """
        body = {k: copy.deepcopy(v) for k, v in lease.items() if k != "status"}
        body["apiVersion"] = LEASES.api_version
        body["kind"] = LEASES.kind
        old_spec = lease.get("spec")
        spec = dict(old_spec) if isinstance(old_spec, Mapping) else {}
        spec.update(
            holderIdentity=holder,
            leaseDurationSeconds=duration,
            acquireTime=acquire_time,
            renewTime=renew_time,
            leaseTransitions=transitions,
        )
        body["spec"] = spec
        return body

    def _request(
        self, method: str, body: Mapping[str, Any] | None, timeout: float
    ) -> dict[str, Any]:
        path = LEASES.path(self._namespace) if method == "POST" else self._path
        return self._kube.request(method, path, body=body, timeout=(timeout, timeout))

    # -- helpers -----------------------------------------------------------------

    def _maybe_report_transition(self) -> None:
        holder = self._record.holder  # elector thread only
        if holder == self._reported_leader:
            return
        self._reported_leader = holder
        if holder:
            logger.info("new leader for lease {}: {}", self.description, holder)
            if self._on_new_leader is not None:
                callback = self._on_new_leader
                self._call(lambda: callback(holder), "on_new_leader")

    def _stopped(self) -> bool:
        with self._cond:
            return self._stopping

    def _wait_until(self, deadline: float) -> None:
        with self._cond:
            while not self._stopping and self._clock.now() < deadline:
                self._clock.condition_wait_until(self._cond, deadline)

    def _call(self, callback: Callable[[], None], what: str) -> None:
        try:
            callback()
        except Exception:
            logger.exception("{} callback for lease {} failed", what, self.description)


def _validate(config: LeaderElectionConfig) -> None:
    """client-go's NewLeaderElector checks, with gm.yaml's key names."""
    if config.leaseDurationSeconds <= config.renewDeadlineSeconds:
        raise ValueError(
            "leaderElection.leaseDurationSeconds must be greater than "
            f"leaderElection.renewDeadlineSeconds ({config.leaseDurationSeconds:g} <= "
            f"{config.renewDeadlineSeconds:g})"
        )
    if config.renewDeadlineSeconds <= JITTER_FACTOR * config.retryPeriodSeconds:
        raise ValueError(
            "leaderElection.renewDeadlineSeconds must be greater than "
            f"{JITTER_FACTOR:g} * leaderElection.retryPeriodSeconds "
            f"({config.renewDeadlineSeconds:g} <= {JITTER_FACTOR * config.retryPeriodSeconds:g})"
        )
    if not config.leaseName or not config.leaseNamespace:
        raise ValueError("leaderElection.leaseName and leaderElection.leaseNamespace must be set")
