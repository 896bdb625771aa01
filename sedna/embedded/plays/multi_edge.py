"""The simulated LC's part for the multi-edge kinds: the reports their workers post.

Sedna's GM sends none of these kinds to an LC; their workers (feature extraction, ReID,
video analytics) POST ``{"phase", "status", "output": {"ownerInfo"}}`` to the LC of
their node, which forwards it under the owner's kind. This play does that for every
running worker pod on its node, every `REPORT_SECONDS`, with a frame counter and a
rate as the owner info, so the owners' ``metrics`` (FeatureExtractionService) and
condition ``data`` (ReidJob, VideoAnalyticsJob) move in embedded mode.
"""

from __future__ import annotations

from typing import Any

from loguru import logger

from sedna.embedded.lc import SimulatedLC
from sedna.runtime.kube import PODS, ApiError

REPORT_SECONDS = 10.0
FRAMES_PER_REPORT = 250
# the owner kind of each reporting worker, by Sedna's label prefix
REPORTING_KINDS = {
    "featureextractionservice": "FeatureExtractionService",
    "reidjob": "ReidJob",
    "videoanalyticsjob": "VideoAnalyticsJob",
}


def _owner_of(pod: dict[str, Any]) -> tuple[str, str] | None:
    """(kind, name) from the pod's ``<kind>.sedna.io/name`` label, for reporting kinds."""
    for key, value in ((pod.get("metadata") or {}).get("labels") or {}).items():
        prefix, _, suffix = key.partition(".sedna.io/")
        if suffix == "name" and prefix in REPORTING_KINDS:
            return REPORTING_KINDS[prefix], str(value)
    return None


class MultiEdgeWorkersPlay:
    """Periodic worker reports for FeatureExtractionService, ReidJob and VideoAnalyticsJob."""

    kinds: tuple[str, ...] = ()  # nothing comes downstream

    def __init__(self) -> None:
        self._next = 0.0
        self._frames: dict[tuple[str, str, str], int] = {}

    def on_insert(
        self, lc: SimulatedLC, kind: str, namespace: str, name: str, obj: dict[str, Any]
    ) -> None:
        pass

    def on_delete(self, lc: SimulatedLC, kind: str, namespace: str, name: str) -> None:
        pass

    def on_worker_finished(self, lc: SimulatedLC, pod: dict[str, Any]) -> bool:
        return False

    def on_tick(self, lc: SimulatedLC) -> None:
        now = lc.clock.now()
        if lc.kube is None or now < self._next:
            return
        self._next = now + REPORT_SECONDS
        try:
            pods = lc.kube.resource(PODS).list(
                None, field_selector=f"spec.nodeName={lc.node},status.phase=Running"
            )["items"]
        except ApiError as exc:
            logger.debug("{}/lc: cannot list the node's pods: {}", lc.node, exc)
            return
        seen: set[tuple[str, str, str]] = set()
        for pod in pods:
            owner = _owner_of(pod)
            if owner is None:
                continue
            kind, name = owner
            ns = str((pod.get("metadata") or {}).get("namespace") or "")
            key = (ns, kind, name)
            if key in seen:
                continue  # one report per owner and round, as one LC forwards
            seen.add(key)
            frames = self._frames.get(key, 0) + FRAMES_PER_REPORT
            self._frames[key] = frames
            info = {"framesProcessed": frames, "fps": FRAMES_PER_REPORT / REPORT_SECONDS}
            lc.report(ns, kind.lower(), name, {
                "phase": "inference", "status": "ok", "output": {"ownerInfo": info},
            })  # fmt: skip
        for gone in set(self._frames) - seen:
            del self._frames[gone]
