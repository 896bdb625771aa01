"""`sedna-gm --config config/gm.yaml` runs a whole incremental-learning cycle on one machine.

The GM runs as a subprocess with a temp copy of the shipped config (own stateDir, free
ports); this test sees it only through the official client, as a user with kubectl
would. Then the GM is stopped with SIGTERM and started again on the same stateDir:
the job and its history must still be there and the next cycle must start without a
second pod for any stage.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sedna.runtime.kube import EVENTS, INCREMENTAL_LEARNING_JOBS, NODES, PODS, KubeClient

from .gm_process import GMProcess, write_config

NS = "default"
JOB = "helmet-detection-demo"
LABEL = "incrementallearningjob.sedna.io/"
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


def conditions(kube: KubeClient) -> list[dict[str, Any]]:
    job = kube.resource(INCREMENTAL_LEARNING_JOBS).get(NS, JOB)
    return list((job.get("status") or {}).get("conditions") or [])


def cycles_done(conds: list[dict[str, Any]]) -> int:
    """How many times CYCLE occurs, in order, as a subsequence of the conditions."""
    done, i = 0, 0
    for c in conds:
        if (c.get("stage"), c.get("type")) == CYCLE[i]:
            i += 1
            if i == len(CYCLE):
                done, i = done + 1, 1  # the closing Train/Waiting opens the next cycle
    return done


def pods_of(kube: KubeClient, worker: str) -> list[dict[str, Any]]:
    selector = f"{LABEL}name={JOB},{LABEL}worker-type={worker}"
    return list(kube.resource(PODS).list(NS, label_selector=selector)["items"])


def active(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in pods if p["status"].get("phase") in ("Pending", "Running")]


def count(conds: list[dict[str, Any]], stage: str, ctype: str) -> int:
    return sum(1 for c in conds if (c.get("stage"), c.get("type")) == (stage, ctype))


def assert_no_duplicate_pods(kube: KubeClient, gm: GMProcess) -> None:
    """Every Ready of a stage made at most one pod; one inference worker serves."""
    pods = {w: pods_of(kube, w) for w in ("train", "eval", "inference")}
    conds = conditions(kube)  # read after the pods: every listed pod has its Ready here
    for worker, stage in (("train", "Train"), ("eval", "Eval")):
        names = sorted(p["metadata"]["name"] for p in pods[worker])
        assert len(names) <= count(conds, stage, "Ready"), (
            f"{len(names)} {worker} pods {names} for {count(conds, stage, 'Ready')} "
            f"{stage}/Ready conditions; log tail:\n{gm.tail()}"
        )
        assert len(active(pods[worker])) <= 1, f"two active {worker} pods; {gm.tail()}"
    assert len(active(pods["inference"])) == 1, f"inference pods: {pods['inference']}"


def test_a_cycle_completes_and_survives_a_restart(gm: GMProcess) -> None:
    gm.start()
    kube = gm.connect()
    # The kubeconfig appears before the GM has started its simulated nodes.
    node = gm.wait_for(lambda: kube.resource(NODES).get(None, "edge-node"), "edge-node", 30)
    assert {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"] == "True"

    first_infer = gm.wait_for(lambda: pods_of(kube, "inference"), "the inference worker", 30)
    first_infer_name = first_infer[0]["metadata"]["name"]

    gm.wait_for(lambda: cycles_done(conditions(kube)) >= 1, "a Train -> Eval -> Deploy cycle", 60)
    assert_no_duplicate_pods(kube, gm)
    conds = conditions(kube)
    for stage, worker in (("Train", "train"), ("Eval", "eval")):
        # The LC reports a worker done before its pod exits (as on a real node), so the
        # cycle may complete a moment before the eval pod is Succeeded.
        finished = gm.wait_for(
            lambda w=worker: [
                p for p in pods_of(kube, w) if p["status"].get("phase") == "Succeeded"
            ],
            f"a finished {worker} pod",
            30,
        )
        assert all(p["spec"]["nodeName"] == "edge-node" for p in finished)
        reported = [
            c for c in conds if (c["stage"], c["type"]) == (stage, "Completed")
            and c.get("message") == "reported by lc"
        ]  # fmt: skip
        assert reported, f"the LC never reported {stage}/Completed"
    infer = pods_of(kube, "inference")
    assert first_infer_name not in {p["metadata"]["name"] for p in infer}, "inference not restarted"
    # The GM's event recorder writes Events on a thread of its own, after the change.
    events = gm.wait_for(
        lambda: [
            e
            for e in kube.resource(EVENTS).list(NS)["items"]
            if e.get("involvedObject", {}).get("name") == JOB
        ],
        "an Event about the job",
        30,
    )
    assert any(e.get("involvedObject", {}).get("name") == JOB for e in events)

    before = conditions(kube)
    pod_names = {p["metadata"]["name"] for w in ("train", "eval") for p in pods_of(kube, w)}
    assert gm.stop() == 0, f"unclean exit; log tail:\n{gm.tail()}"

    gm.start()
    kube = gm.connect()
    after = conditions(kube)
    assert after[: len(before)] == before, "the job's history changed across the restart"
    still = {p["metadata"]["name"] for w in ("train", "eval") for p in pods_of(kube, w)}
    assert pod_names <= still, "pods of the first run are gone"

    def next_cycle_started() -> bool:
        conds = conditions(kube)
        new = conds[len(before) :]
        return any(c["type"] == "Ready" for c in new) and any(
            c["type"] in ("Running", "Completed") for c in new
        )

    gm.wait_for(next_cycle_started, "the next cycle to start after the restart", 60)
    assert_no_duplicate_pods(kube, gm)
    gm.wait_for(
        lambda: cycles_done(conditions(kube)) > cycles_done(before),
        "a cycle to complete after the restart",
        60,
    )
    assert_no_duplicate_pods(kube, gm)
    gm.stop()
    # An operator's first run logs no error and no connection churn (regressions: a
    # missing optional token file logged as an ERROR on every start; the watches took
    # the whole connection pool).
    noise = [
        ln
        for ln in gm.log.read_text().splitlines()
        if " ERROR " in ln or "Traceback" in ln or "pool is full" in ln
    ]
    assert not noise, "\n".join(noise[:10])
