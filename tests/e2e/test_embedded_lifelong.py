"""`sedna-gm --config config/gm.yaml` runs a whole lifelong-learning cycle beside the IL one.

The GM runs as a subprocess with a temp copy of the shipped config; this test sees it
only through the official client. It is stopped with SIGTERM and started again on the
same stateDir: the LL job goes on without a second pod for any stage.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sedna.runtime.kube import INCREMENTAL_LEARNING_JOBS, LIFELONG_LEARNING_JOBS, PODS, KubeClient

from .gm_process import GMProcess, write_config

NS = "default"
JOB = "atcii-classifier-demo"
LABEL = "lifelonglearningjob.sedna.io/"
CYCLE = [
    ("Train", "Waiting"),
    ("Train", "Ready"),
    ("Train", "Completed"),
    ("Eval", "Waiting"),
    ("Eval", "Ready"),
    ("Eval", "Completed"),
    ("Deploy", "Waiting"),
    ("Deploy", "Ready"),
    ("Deploy", "Completed"),
    ("Train", "Waiting"),
]

pytestmark = pytest.mark.timeout(180)


@pytest.fixture()
def gm(tmp_path: Path) -> Iterator[GMProcess]:
    proc = GMProcess(write_config(tmp_path))
    try:
        yield proc
    finally:
        proc.stop()


def job(kube: KubeClient) -> dict[str, Any]:
    return kube.resource(LIFELONG_LEARNING_JOBS).get(NS, JOB)


def conditions(kube: KubeClient) -> list[dict[str, Any]]:
    return list((job(kube).get("status") or {}).get("conditions") or [])


def cycles_done(conds: list[dict[str, Any]]) -> int:
    """How many times CYCLE occurs, in order, as a subsequence of the conditions."""
    done, i = 0, 0
    for c in conds:
        if (c.get("stage"), c.get("type")) == CYCLE[i]:
            i += 1
            if i == len(CYCLE):
                done, i = done + 1, 1
    return done


def pods_of(kube: KubeClient, worker: str) -> list[dict[str, Any]]:
    selector = f"{LABEL}name={JOB},{LABEL}worker-type={worker}"
    return list(kube.resource(PODS).list(NS, label_selector=selector)["items"])


def assert_no_duplicate_pods(kube: KubeClient, gm: GMProcess) -> None:
    pods = {w: pods_of(kube, w) for w in ("train", "eval", "inference")}
    conds = conditions(kube)
    for worker, stage in (("train", "Train"), ("eval", "Eval")):
        readies = sum(1 for c in conds if (c["stage"], c["type"]) == (stage, "Ready"))
        assert len(pods[worker]) <= readies, f"{worker}: {len(pods[worker])} pods; {gm.tail()}"
    live = [p for p in pods["inference"] if not p["metadata"].get("deletionTimestamp")]
    assert len(live) <= 1, f"inference pods: {[p['metadata']['name'] for p in live]}"


def test_a_lifelong_cycle_completes_beside_il_and_survives_a_restart(gm: GMProcess) -> None:
    gm.start()
    kube = gm.connect()
    gm.wait_for(lambda: cycles_done(conditions(kube)) >= 1, "a lifelong-learning cycle", 60)
    assert_no_duplicate_pods(kube, gm)
    kb = job(kube)["status"]["knowledgeBase"]
    assert kb["AIModels"]["numberOfAIModels"] >= 1 and kb["AIClasses"]["numberOfAIClasses"] == 3
    assert gm.wait_for(lambda: pods_of(kube, "inference"), "the inference worker", 30)
    # the IL example runs beside it
    il = kube.resource(INCREMENTAL_LEARNING_JOBS).get(NS, "helmet-detection-demo")
    assert il["status"]["conditions"]

    assert gm.stop() == 0
    restarted = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    gm.start()
    kube = gm.connect()

    def deployed_since_restart() -> bool:
        return any(
            (c["stage"], c["type"]) == ("Deploy", "Completed")
            and c.get("lastTransitionTime", "") >= restarted
            for c in conditions(kube)
        )

    gm.wait_for(deployed_since_restart, "a Deploy after the restart", 60)
    assert_no_duplicate_pods(kube, gm)
