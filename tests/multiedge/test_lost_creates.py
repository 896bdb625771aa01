"""A create that commits but whose answer is lost (504) makes no second bare pod.

The pod cache is frozen (its informer stopped) before the owner exists, so no sync ever
sees the pods it made: only reading the API before the retry can find the one whose
answer was lost. Virtual time runs the failed syncs' retries (Sedna's 10 s backoff, and
more) at once, and stays far below the 300 s a create is expected for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sedna.embedded.apiserver import APIServer
from sedna.runtime import FakeClock, sedna_resource
from sedna.runtime.kube import SEDNA_KINDS

from .helpers import Api, fixed_sample, model, reid_job, video_analytics_job, wait_until

# (feature, kind, owner name, worker type, bare pods wanted)
CASES = [
    ("object_search", "ObjectSearchService", "pedestrian-search", "trackingworker", 2),
    ("object_tracking", "ObjectTrackingService", "pedestrian-tracking", "trackingworker", 2),
    ("reid", "ReidJob", "reid-demo", "reid", 1),
    ("video_analytics", "VideoAnalyticsJob", "va-demo", "videoanalytics", 1),
]
SAMPLES = {
    "ObjectSearchService": "objectsearchservice_v1alpha1.yaml",
    "ObjectTrackingService": "objecttrackingservice_v1alpha1.yaml",
}


def _owner(api: Api, ref: Path, kind: str) -> dict[str, Any]:
    if kind in SAMPLES:
        return fixed_sample(ref, SAMPLES[kind])
    if kind == "ReidJob":
        return reid_job()
    api.create(model("va-model"))
    return video_analytics_job()


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_lost_create_answer_makes_no_second_pod(
    make_gm: Any,
    api: Api,
    embedded_apiserver: APIServer,
    sample_dir: Path,
    case: tuple[str, str, str, str, int],
) -> None:
    feature, kind, name, worker_type, wanted = case
    faults = embedded_apiserver.faults
    clock = FakeClock()
    try:
        gm = make_gm(features=[feature], clock=clock)
        assert gm.manager is not None
        # the feature's own (label-scoped) pod informer is the cache its syncs read
        plural = {k: p for p, k in SEDNA_KINDS.items()}[kind]
        gm.manager.container.informers().worker_pods(sedna_resource(plural)).stop(5.0)
        controller = next(f.controller for f in gm.manager.features if f.name == feature)
        # every bare pod's first create commits, and the GM hears 504
        rule = faults.fail(
            504, verbs=["create"], resources=["pods"], count=wanted, after_commit=True
        )
        owner = _owner(api, sample_dir, kind)
        assert owner["metadata"]["name"] == name
        api.create(owner)
        wait_until(lambda: rule.remaining != wanted, what="the first lost answer")
        for _ in range(12):  # each lost answer costs a retry: 10 s, then 20 s of backoff
            assert controller.wait_idle(5.0)
            # a status is written only by a sync that found a pod for every worker (a
            # job-style kind's running status has a phase and no condition, as Sedna's)
            status = api.status(kind, name)
            if rule.remaining == 0 and (status.get("conditions") or status.get("phase")):
                break
            clock.step(10.0)
        else:
            raise AssertionError(f"{kind} {name}: not settled, status {api.status(kind, name)}")
        pods = api.pods_of(name, worker_type)
        assert len(pods) == wanted, [p["metadata"]["name"] for p in pods]
        keys = {p["metadata"]["annotations"]["sedna-gm.io/worker-key"] for p in pods}
        assert len(keys) == wanted
        for pod in pods:  # each announced, also one adopted in a sync that failed later
            api.wait_event_on(name, "SuccessfulCreate", pod["metadata"]["name"])
    finally:
        faults.reset()
