"""The simulated LC's joint inference part: the edge worker's metrics, as the Go LC forwards them.

On a real node the edge worker (sedna's ``JointInference``) posts its counters to the
LC every ``LC_PERIOD`` seconds (30 by default) and the LC sends them upstream as
``{"phase": "inference", "status": "", "output": {"ownerInfo": {...}}}``. This play
does the same for each service the GM sent this LC, while the service's edge worker
pod runs on this node: every `period` seconds it counts `frames_per_second` inferences,
one in `hard_every` of them a hard example sent to the cloud worker.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from loguru import logger

from sedna.embedded.lc import SimulatedLC
from sedna.runtime.kube import PODS

KIND = "jointinferenceservice"
LABEL = "jointinferenceservice.sedna.io/"


@dataclass
class _Service:
    namespace: str
    name: str
    obj: dict[str, Any]
    started: str = ""
    next_report: float = 0.0
    inferences: int = 0
    hard: int = 0


def _local_time() -> str:
    # sedna's LCReporter format
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())


class JointInferencePlay:
    """Metrics reports for the joint inference services of one simulated node."""

    kinds: tuple[str, ...] = (KIND,)

    def __init__(
        self, *, period: float = 5.0, frames_per_second: int = 10, hard_every: int = 6
    ) -> None:
        self.period = period
        self.frames_per_second = frames_per_second
        self.hard_every = hard_every
        self.services: dict[str, _Service] = {}

    def on_insert(
        self, lc: SimulatedLC, kind: str, namespace: str, name: str, obj: dict[str, Any]
    ) -> None:
        key = f"{namespace}/{name}"
        svc = self.services.get(key)
        if svc is None:
            self.services[key] = _Service(namespace, name, obj, next_report=lc.clock.now())
            logger.info("{}/lc: joint inference service {} received", lc.node, key)
        else:
            svc.obj = obj

    def on_delete(self, lc: SimulatedLC, kind: str, namespace: str, name: str) -> None:
        if self.services.pop(f"{namespace}/{name}", None) is not None:
            logger.info("{}/lc: joint inference service {}/{} deleted", lc.node, namespace, name)

    def on_worker_finished(self, lc: SimulatedLC, pod: dict[str, Any]) -> bool:
        return False

    def on_tick(self, lc: SimulatedLC) -> None:
        now = lc.clock.now()
        for svc in list(self.services.values()):
            if now < svc.next_report:
                continue
            svc.next_report = now + self.period
            if not self._edge_worker_runs(lc, svc):
                continue
            if not svc.started:
                svc.started = _local_time()
                continue  # the worker's first period starts now
            frames = int(self.frames_per_second * self.period)
            svc.inferences += frames
            svc.hard += max(1, frames // self.hard_every)
            lc.report(svc.namespace, KIND, svc.name, self.payload(svc))
            logger.info(
                "{}/lc: joint inference service {}/{}: {} inferences, {} hard examples "
                "sent to the cloud (reported)",
                lc.node, svc.namespace, svc.name, svc.inferences, svc.hard,
            )  # fmt: skip

    def payload(self, svc: _Service) -> dict[str, Any]:
        return {
            "phase": "inference",
            "status": "",
            "output": {
                "ownerInfo": {
                    "startTime": svc.started,
                    "updateTime": _local_time(),
                    "inferenceNumber": svc.inferences,
                    "hardExampleNumber": svc.hard,
                    "uploadCloudRatio": svc.hard / svc.inferences,
                }
            },
        }

    def _edge_worker_runs(self, lc: SimulatedLC, svc: _Service) -> bool:
        if lc.kube is None:
            return True  # no API to look at: assume the worker runs
        selector = f"{LABEL}name={svc.name},{LABEL}worker-type=edge"
        try:
            pods = lc.kube.resource(PODS).list(svc.namespace, label_selector=selector)["items"]
        except Exception as exc:  # the API may be restarting; try next period
            lc.warn_once(f"ji-pods:{exc!r}", f"cannot list the pods of {svc.name}: {exc!r}")
            return False
        return any(
            (p.get("spec") or {}).get("nodeName") == lc.node
            and (p.get("status") or {}).get("phase") == "Running"
            for p in pods
        )
