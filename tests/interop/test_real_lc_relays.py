"""What Sedna's real LC reports for the kinds that are not staged: a Dataset's sample
count, a joint inference worker's metrics, a federated round; and what it does with
the multi-edge kinds (nothing: it has no manager for them).

Two real LCs are two nodes of one GM, as federated learning needs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import kubernetes
import pytest

from sedna.testing import GMHarness, wait_until

from .inputs import Objects, example, on_node, walk
from .peers import RealLC

pytestmark = pytest.mark.sedna_bin

TIMEOUT = 30.0
MULTI_EDGE = {
    "object-search-service": "ObjectSearchService",
    "object-tracking-service": "ObjectTrackingService",
    "feature-extraction-service": "FeatureExtractionService",
    "reid-job": "ReidJob",
    "video-analytics-job": "VideoAnalyticsJob",
}


@pytest.fixture()
def objects(client: kubernetes.client.ApiClient, ns: str) -> Objects:
    return Objects(client, ns)


def dataset(name: str, node: str, url: str, fmt: str) -> dict[str, Any]:
    return {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "Dataset",
        "metadata": {"name": name},
        "spec": {"url": url, "format": fmt, "nodeName": node},
    }


def write_lines(lc: RealLC, url: str, lines: list[str]) -> None:
    path = lc.path(url)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines))


def sent_lines(lc: RealLC, kind: str) -> list[str]:
    """The LC's log lines of messages of `kind` (lower case) it sent to the GM."""
    return [
        line
        for line in lc.logs().splitlines()
        if "client sent message header" in line and f"ResourceKind:{kind}" in line
    ]


def received_lines(lc: RealLC, kind: str) -> list[str]:
    return [
        line
        for line in lc.logs().splitlines()
        if "client received message header" in line and f"ResourceKind:{kind}" in line
    ]


def test_dataset_counts_reach_status(
    objects: Objects, gm: GMHarness, real_lc: Callable[[str], RealLC]
) -> None:
    lc = real_lc("edge-data")
    write_lines(lc, "/data/a/index.txt", [f"img/{i}.jpg" for i in range(120)])
    # a CSV's first line is its header, not a sample
    write_lines(lc, "/data/b/index.csv", ["path,label", *[f"img/{i}.jpg,1" for i in range(30)]])
    # hostile: an unknown format, and an index that does not exist: nothing to count
    write_lines(lc, "/data/c/index.bin", ["x"] * 5)
    objects.create(dataset("txt-set", lc.node, "/data/a/index.txt", "txt"))
    objects.create(dataset("csv-set", lc.node, "/data/b/index.csv", "csv"))
    objects.create(dataset("odd-format", lc.node, "/data/c/index.bin", "bin"))
    objects.create(dataset("missing", lc.node, "/data/none/index.txt", "txt"))

    def counts() -> dict[str, Any] | None:
        got = {
            n: objects.status("Dataset", n).get("numberOfSamples") for n in ("txt-set", "csv-set")
        }
        return got if all(v is not None for v in got.values()) else None

    assert wait_until(counts, TIMEOUT, "the datasets' sample counts") == {
        "txt-set": 120,
        "csv-set": 30,
    }
    # the LC reported nothing for the others: it logged each failure and went on
    wait_until(
        lambda: "dataset format(bin) is invalid" in lc.logs(), TIMEOUT, "the LC's format error"
    )
    for name in ("odd-format", "missing"):
        assert "numberOfSamples" not in objects.status("Dataset", name)


def test_joint_inference_metrics_reach_status(
    objects: Objects, gm: GMHarness, real_lc: Callable[[str], RealLC]
) -> None:
    lc = real_lc("edge-ji")
    for doc in example("joint-inference"):
        objects.create(on_node(doc, lc.node))
    service = next(d for d in example("joint-inference") if d["kind"] == "JointInferenceService")
    name = service["metadata"]["name"]
    wait_until(lambda: received_lines(lc, "jointinferenceservice"), TIMEOUT, "JI sent to LC")

    def report(worker: str, info: dict[str, Any]) -> int:
        return lc.report(
            worker,
            namespace=objects.ns,
            owner_kind="jointinferenceservice",
            owner_name=name,
            kind="inference",
            status="running",
            owner_info=info,
        )

    # hostile first: a report our GM rejects (too many entries) changes nothing ...
    assert report("edge-worker-0", {f"k{i}": i for i in range(500)}) == 200
    # ... and the next, good one lands
    good = {
        "inferenceNumber": 42,
        "hardExampleNumber": 7,
        "uploadCloudRatio": 0.16,
        "startTime": "2026-01-01 00:00:00",
        "updateTime": "2026-01-01 00:01:00",
    }
    assert report("edge-worker-0", good) == 200

    def metrics() -> dict[str, str] | None:
        found = objects.status("JointInferenceService", name).get("metrics") or []
        return {m["key"]: m["value"] for m in found} or None

    assert wait_until(metrics, TIMEOUT, "the JI metrics in status") == {
        "inferenceNumber": "42",
        "hardExampleNumber": "7",
        "uploadCloudRatio": "0.16",
    }


def test_federated_round_reaches_status(
    objects: Objects, gm: GMHarness, real_lc: Callable[[str], RealLC]
) -> None:
    nodes = {"edge-node": real_lc("edge-fl-1"), "edge-node-2": real_lc("edge-fl-2")}
    docs = example("federated-learning")
    for doc in docs:
        for m in walk(doc):
            if m.get("nodeName") in nodes:
                m["nodeName"] = nodes[m["nodeName"]].node
        objects.create(doc)
    job = next(d for d in docs if d["kind"] == "FederatedLearningJob")
    name = job["metadata"]["name"]
    model = job["spec"]["aggregationWorker"]["model"]["name"]
    for peer in nodes.values():

        def told(peer: RealLC = peer) -> list[str]:
            return received_lines(peer, "federatedlearningjob")

        wait_until(told, TIMEOUT, f"the FL job sent to {peer.node}")

    lc = nodes["edge-node"]
    status = lc.report(
        "surface-defect-detection-train-0",
        namespace=objects.ns,
        owner_kind="federatedlearningjob",
        owner_name=name,
        kind="train",
        status="running",
        owner_info={"currentRound": 3, "updateTime": "2026-01-01T00:00:00Z"},
        results=[{"format": "pb", "url": "/model/3", "metrics": {"accuracy": [0.91]}}],
    )
    assert status == 200

    def round_condition() -> list[dict[str, Any]]:
        conds = objects.status("FederatedLearningJob", name).get("conditions") or []
        return [c for c in conds if c.get("reason") == "DoTraining"]

    conds = wait_until(round_condition, TIMEOUT, "the FL round in status")
    assert "3" in str(conds[-1].get("message"))
    wait_until(
        lambda: objects.status("Model", model).get("metrics"), TIMEOUT, "the model's metrics"
    )
    assert [m["key"] for m in objects.status("Model", model)["metrics"]] == ["accuracy"]


def test_multi_edge_kinds_are_not_the_lcs_business(
    objects: Objects, gm: GMHarness, real_lc: Callable[[str], RealLC]
) -> None:
    """Neither GM sends these kinds to an LC, and the real LC has no manager for them:
    a worker's report naming one is answered 200 and dropped, nothing goes upstream."""
    lc = real_lc("edge-multi")
    created: dict[str, str] = {}
    for folder, kind in MULTI_EDGE.items():
        for doc in example(folder):
            objects.create(on_node(doc, lc.node))
            if doc["kind"] == kind:
                created[kind] = doc["metadata"]["name"]
    # a dataset as a marker: once its count arrived, the LC had time to get the rest
    write_lines(lc, "/data/marker.txt", ["a", "b"])
    objects.create(dataset("marker", lc.node, "/data/marker.txt", "txt"))
    wait_until(
        lambda: objects.status("Dataset", "marker").get("numberOfSamples") == 2,
        TIMEOUT,
        "the marker dataset's count",
    )
    before = {kind: objects.status(kind, name) for kind, name in created.items()}
    for kind, name in created.items():
        assert (
            lc.report(
                f"{name}-worker",
                namespace=objects.ns,
                owner_kind=kind.lower(),
                owner_name=name,
                kind="inference",
                status="running",
                owner_info={"inferenceNumber": 1},
            )
            == 200
        )
    # the LC forwards a known kind's report at once; one sent after these came through
    marker = lc.report(
        "marker-worker",
        namespace=objects.ns,
        owner_kind="jointinferenceservice",
        owner_name="no-such-service",
        kind="inference",
        status="running",
    )
    assert marker == 200
    wait_until(lambda: sent_lines(lc, "jointinferenceservice"), TIMEOUT, "the marker report")
    for kind, name in created.items():
        assert received_lines(lc, kind.lower()) == [], kind
        assert sent_lines(lc, kind.lower()) == [], kind
        assert objects.status(kind, name).get("metrics") == before[kind].get("metrics"), kind
