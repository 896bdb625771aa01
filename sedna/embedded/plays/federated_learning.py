"""The simulated LC's federated-learning part: training rounds and the aggregation result.

Sedna's LC keeps the FederatedLearningJob the GM inserts and forwards what the training
workers on its node tell it (`pkg/localcontroller/managers/federatedlearning`): each
round reached (`ownerInfo.currentRound`) and, at the end, the aggregated model with its
metrics. This play stands in for those workers: while a job it trains for is known, it
reports one round every `round_seconds`, up to the round before the aggregator's
`exit_round` (the sample's env; 3 when absent); when a training worker of the job exits
on this node it reports the last round with the model's metrics. A spec change (new
generation) starts the rounds again, as the GM rebuilds the workers.

A job the GM sends already finished (a Complete or Failed condition, or phase
Succeeded/Failed: the GM inserts every job again when an LC reconnects, e.g. after a
restart) is kept but not trained: its workers are gone and the GM records no more
rounds for it, so reporting them again would only repeat "round 1/3" in the log.

Every training node's LC reports every round, as on a real cluster; the GM records each
round once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loguru import logger

from sedna.embedded.kubelet import worker_type
from sedna.embedded.lc import SimulatedLC

FL_KIND = "federatedlearningjob"
DEFAULT_EXIT_ROUND = 3
MAX_EXIT_ROUND = 1000
FINISHED_PHASES = ("Succeeded", "Failed")
FINISHED_CONDITIONS = ("Complete", "Failed")


@dataclass
class _Job:
    namespace: str
    name: str
    generation: int
    exit_round: int
    model_url: str
    workers_here: int
    started: float
    reported: int = 0  # the last round reported
    done: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _exit_round(obj: Mapping[str, Any]) -> int:
    """The aggregator's `exit_round` env (Sedna's sample stops aggregating there)."""
    spec = obj.get("spec") or {}
    template = ((spec.get("aggregationWorker") or {}).get("template") or {}).get("spec") or {}
    for c in template.get("containers") or []:
        for e in (c or {}).get("env") or []:
            if (e or {}).get("name") == "exit_round":
                try:
                    return max(1, min(int(str(e.get("value"))), MAX_EXIT_ROUND))
                except ValueError:
                    return DEFAULT_EXIT_ROUND
    return DEFAULT_EXIT_ROUND


def _finished(obj: Mapping[str, Any]) -> bool:
    """Whether the GM's status says the job is over (Sedna's `IsJobFinished`, or the phase)."""
    status = obj.get("status")
    if not isinstance(status, Mapping):
        return False
    if status.get("phase") in FINISHED_PHASES:
        return True
    conds = status.get("conditions")
    return isinstance(conds, list) and any(
        isinstance(c, Mapping)
        and c.get("type") in FINISHED_CONDITIONS
        and c.get("status") == "True"
        for c in conds
    )


def _workers_on(obj: Mapping[str, Any], node: str) -> int:
    count = 0
    for w in (obj.get("spec") or {}).get("trainingWorkers") or []:
        tspec = ((w or {}).get("template") or {}).get("spec") or {}
        host = (tspec.get("nodeSelector") or {}).get("kubernetes.io/hostname")
        if tspec.get("nodeName") == node or (not tspec.get("nodeName") and host == node):
            count += 1
    return count


def _metrics(current_round: int, exit_round: int) -> dict[str, float]:
    """What the simulated aggregation reaches: better with every round."""
    progress = current_round / max(exit_round, 1)
    return {"accuracy": round(0.6 + 0.3 * progress, 4), "loss": round(0.9 - 0.6 * progress, 4)}


class FederatedLearningPlay:
    """One per simulated LC; runs on its scheduler thread only."""

    kinds: tuple[str, ...] = (FL_KIND,)

    def __init__(self, round_seconds: float = 1.0) -> None:
        self.round_seconds = round_seconds
        self.jobs: dict[str, _Job] = {}

    def on_insert(
        self, lc: SimulatedLC, kind: str, namespace: str, name: str, obj: dict[str, Any]
    ) -> None:
        key = f"{namespace}/{name}"
        generation = int((obj.get("metadata") or {}).get("generation") or 1)
        known = self.jobs.get(key)
        finished = _finished(obj)
        if known is not None and (known.generation == generation or (finished and known.done)):
            known.workers_here = _workers_on(obj, lc.node)
            if finished:
                known.done = True
            return
        spec = obj.get("spec") or {}
        job = _Job(
            namespace,
            name,
            generation,
            _exit_round(obj),
            f"/model/{((spec.get('aggregationWorker') or {}).get('model') or {}).get('name')}",
            _workers_on(obj, lc.node),
            lc.clock.now(),
        )
        self.jobs[key] = job
        if finished:
            job.done = True
            job.reported = job.exit_round
            logger.info(
                "{}/lc: federated learning job {} received, already finished: nothing to train",
                lc.node, key,
            )  # fmt: skip
            return
        logger.info(
            "{}/lc: federated learning job {} received: {} training worker(s) here, {} rounds",
            lc.node, key, job.workers_here, job.exit_round,
        )  # fmt: skip

    def on_delete(self, lc: SimulatedLC, kind: str, namespace: str, name: str) -> None:
        if self.jobs.pop(f"{namespace}/{name}", None) is not None:
            logger.info("{}/lc: federated learning job {}/{} deleted", lc.node, namespace, name)

    def on_tick(self, lc: SimulatedLC) -> None:
        now = lc.clock.now()
        for job in self.jobs.values():
            if job.done or not job.workers_here:
                continue
            due = int((now - job.started) / self.round_seconds)
            target = min(due, job.exit_round - 1)
            if target > job.reported:
                self._report(lc, job, target, final=False)

    def on_worker_finished(self, lc: SimulatedLC, pod: dict[str, Any]) -> bool:
        meta = pod.get("metadata") or {}
        owner = next((r for r in meta.get("ownerReferences") or [] if r.get("controller")), None)
        if owner is None or str(owner.get("kind") or "").lower() != FL_KIND:
            return False
        job = self.jobs.get(f"{meta.get('namespace')}/{owner.get('name')}")
        if job is None or worker_type(pod) != "train":
            return True  # not ours to report (or the job is gone): nothing to say
        if not job.done:
            self._report(lc, job, job.exit_round, final=True)
        return True

    def _report(self, lc: SimulatedLC, job: _Job, current_round: int, *, final: bool) -> None:
        job.reported = current_round
        job.done = final
        model: dict[str, Any] = {"format": "pb", "url": f"{job.model_url}/round-{current_round}"}
        if final:
            model["metrics"] = _metrics(current_round, job.exit_round)
        stamp = lc.clock.wall().strftime("%Y-%m-%dT%H:%M:%SZ")
        payload = {
            "phase": "train",
            "status": "completed" if final else "running",
            "output": {
                "models": [model],
                "ownerInfo": {"currentRound": current_round, "updateTime": stamp},
            },
        }
        lc.report(job.namespace, FL_KIND, job.name, payload)
        logger.info(
            "{}/lc: federated learning job {}: round {}/{}{}",
            lc.node, job.key, current_round, job.exit_round,
            f" done, aggregated model {model['metrics']}" if final else "",
        )  # fmt: skip
