"""The same inputs to this GM and to Sedna's Go GM, each on its own API server, and
what each made of them: pods, Deployments, Services, HPAs, statuses and the messages
each sent to the nodes' LCs (a test LC plays each node against each GM).

Every difference left after the normalisation (see `differential.py`) must be listed,
with its reason, on `docs/differences-from-sedna.md`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from sedna.embedded.apiserver import APIServer
from sedna.testing import GMHarness, LCBase, api_client_for, start_apiserver, wait_until

from .conftest import ALL_FEATURES, namespace_body
from .differential import (
    GoGM,
    Snapshot,
    differences,
    documented,
    take_snapshot,
    undocumented,
)
from .inputs import PLURALS, Objects, example
from .peers import free_port, go_gm_binary

pytestmark = pytest.mark.sedna_bin

NODES = ("edge-node", "edge-node-2", "cloud-node")
SETTLE_TIMEOUT = 20.0


@dataclass
class Side:
    """One API server, one GM on it, a test LC per node connected to that GM."""

    name: str
    server: APIServer
    stop: Callable[[], None]
    port: int
    alive: Callable[[], bool]
    lcs: list[LCBase] = field(default_factory=list)

    def client(self) -> kubernetes.client.ApiClient:
        return api_client_for(self.server)

    def connect_lcs(self) -> None:
        def dial(node: str) -> LCBase | None:
            assert self.alive(), f"the {self.name} GM exited"
            try:
                return LCBase(self.port, node)
            except OSError:
                return None

        for node in NODES:

            def dialled(node: str = node) -> LCBase | None:
                return dial(node)

            self.lcs.append(wait_until(dialled, 20, f"{self.name} GM's websocket"))

    def lc(self, node: str) -> LCBase:
        return next(lc for lc in self.lcs if lc.node == node)


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Side, Side]]:
    binary = go_gm_binary()
    folder: Path = tmp_path_factory.mktemp("go-gm")
    ours_srv, go_srv = start_apiserver(), start_apiserver()
    harness = GMHarness(
        lambda: api_client_for(ours_srv), "", features={f: {} for f in ALL_FEATURES}
    )
    go = GoGM(binary, go_srv, folder, free_port())
    made: list[Side] = []
    try:
        harness.start()
        made.append(Side("our", ours_srv, harness.stop, harness.port, lambda: True))
        go.start()
        made.append(Side("Go", go_srv, go.stop, go.port, go.alive))
        for side in made:
            side.connect_lcs()
        yield made[0], made[1]
    finally:
        for side in made:
            for lc in side.lcs:
                lc.close()
            side.stop()
        ours_srv.stop()
        go_srv.stop()


@dataclass
class Scenario:
    """One kind's inputs, the LC reports that follow, and what both GMs must have done
    before the comparison means anything."""

    folder: str
    kind: str
    reports: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    ready: Callable[[Snapshot], bool] = lambda s: any(s.owned.values())
    go_acts: bool = True  # False: Sedna's Go GM has no controller for the kind


def _status_of(kind: str) -> Callable[[Snapshot], bool]:
    return lambda s: any(k.startswith(f"{kind}/") and v for k, v in s.statuses.items())


def _train_pod(s: Snapshot) -> bool:
    return any(
        p["metadata"].get("labels", {}).get(k) == "train"
        for p in s.owned["pods"]
        for k in p["metadata"].get("labels", {})
        if k.endswith("/worker-type")
    )


TRAIN_READY = {
    "phase": "train",
    "status": "ready",
    "input": {
        "models": [{"format": "ckpt", "url": "/models/base_model"}],
        "dataURL": "/output/data/train/1/data.txt",
        "outputDir": "/output/train/1",
    },
}
LL_TRAIN_READY = {
    "phase": "train",
    "status": "ready",
    "input": {"dataURL": "/output/data/train/1/data.txt", "outputDir": "/output/train/1"},
}
JI_REPORT = {
    "phase": "inference",
    "status": "running",
    "output": {"ownerInfo": {"inferenceNumber": 42, "hardExampleNumber": 7}},
}
FL_REPORT = {
    "phase": "train",
    "status": "running",
    "output": {
        "models": [{"format": "pb", "url": "/m/3", "metrics": {"accuracy": [0.9]}}],
        "ownerInfo": {"currentRound": 3, "updateTime": "2026-01-01T00:00:00Z"},
    },
}

SCENARIOS = {
    "IncrementalLearningJob": Scenario(
        "incremental-learning",
        "IncrementalLearningJob",
        [("edge-node", "helmet-detection-demo", TRAIN_READY)],
        _train_pod,
    ),
    "LifelongLearningJob": Scenario(
        "lifelong-learning",
        "LifelongLearningJob",
        [("edge-node", "atcii-classifier-demo", LL_TRAIN_READY)],
        _train_pod,
    ),
    "JointInferenceService": Scenario(
        "joint-inference",
        "JointInferenceService",
        [("edge-node", "helmet-detection-inference-example", JI_REPORT)],
        _status_of("JointInferenceService"),
    ),
    "FederatedLearningJob": Scenario(
        "federated-learning",
        "FederatedLearningJob",
        [("edge-node", "surface-defect-detection", FL_REPORT)],
        _status_of("FederatedLearningJob"),
    ),
    "ObjectSearchService": Scenario("object-search-service", "ObjectSearchService"),
    "ObjectTrackingService": Scenario(
        "object-tracking-service", "ObjectTrackingService", go_acts=False
    ),
    "FeatureExtractionService": Scenario("feature-extraction-service", "FeatureExtractionService"),
    "ReidJob": Scenario("reid-job", "ReidJob"),
    "VideoAnalyticsJob": Scenario("video-analytics-job", "VideoAnalyticsJob"),
}


def _subjects(docs: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(d["kind"], PLURALS[d["kind"]], d["metadata"]["name"]) for d in docs]


@pytest.mark.parametrize("kind", list(SCENARIOS))
def test_same_inputs_same_results(kind: str, sides: tuple[Side, Side]) -> None:
    scenario = SCENARIOS[kind]
    ns = f"diff-{uuid.uuid4().hex[:6]}"
    docs = example(scenario.folder)
    listed = documented()
    for side in sides:
        with side.client() as client:
            kubernetes.client.CoreV1Api(client).create_namespace(namespace_body(ns))
            objects = Objects(client, ns)
            for doc in docs:
                objects.create(doc)

    def snapshot(side: Side) -> Snapshot:
        with side.client() as client:
            return take_snapshot(client, ns, _subjects(docs), side.lcs)

    ours, go = sides
    # a report goes once each GM sent the job to that node's LC
    for node, name, payload in scenario.reports:
        for side in sides:
            side.lc(node).await_message(kind.lower(), "insert", name, timeout=SETTLE_TIMEOUT)
            side.lc(node).send_status(ns, kind.lower(), name, payload)
    for side in sides if scenario.go_acts else sides[:1]:

        def acted(side: Side = side) -> bool:
            return scenario.ready(snapshot(side))

        wait_until(
            acted,
            SETTLE_TIMEOUT,
            f"the {side.name} GM to act on the {kind} reports",
        )

    # both may still be on the way: wait until only listed differences remain
    def left() -> list[Any]:
        return undocumented(differences(snapshot(ours), snapshot(go)), listed)

    try:
        wait_until(lambda: not left(), SETTLE_TIMEOUT, "no unlisted difference")
    except AssertionError:
        found = "\n".join(f"  {d.id}: {d.detail}" for d in left())
        pytest.fail(f"differences from Sedna's Go GM not on the differences page:\n{found}")
