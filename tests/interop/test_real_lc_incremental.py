"""An IncrementalLearningJob through Sedna's real LC: its trigger fires from a real
dataset index file, the workers report to its REST API, it copies the trained model.

The kubelet is a stand-in (`sedna.testing.Kubelet`): the test moves the pods through
their phases and plays each worker's report to the LC, as Sedna's Python library sends
it when a stage ends.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from sedna.testing import GMHarness, Kubelet, wait_until

from .inputs import Objects, example, on_node
from .peers import RealLC

pytestmark = pytest.mark.sedna_bin

KIND = "IncrementalLearningJob"
OWNER_KIND = "incrementallearningjob"  # the LC's feature manager for IL workers
# The real LC polls its datasets every 60 s and ticks each job every 10 s.
STAGE_TIMEOUT = 45.0


def il_inputs(node: str, deploy_model: Path, samples: int) -> list[dict[str, Any]]:
    """The IL example on `node`; the deploy trigger reads the first precision delta
    (`precision_delta[0]`: the real LC's metrics are lists and it reads a bare list as
    0); the deploy model is a path of this machine, as the LC copies to it as is."""
    docs = [on_node(d, node) for d in example("incremental-learning")]
    for d in docs:
        if d["kind"] == "Model" and d["metadata"]["name"] == "deploy-model":
            d["spec"]["url"] = str(deploy_model)
        if d["kind"] == KIND:
            cond = d["spec"]["deploySpec"]["trigger"]["condition"]
            cond["metric"] = "precision_delta[0]"
            d["spec"]["trainSpec"]["trigger"]["condition"]["threshold"] = samples // 2
    return docs


def write_index(lc: RealLC, url: str, count: int, start: int = 0) -> None:
    """A dataset index file of `count` sample lines (appending after `start`)."""
    path = lc.path(url)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        for i in range(start, start + count):
            f.write(f"images/{i:05d}.jpg labels/{i:05d}.txt\n")


class ILWorld:
    """One IL job on one real LC: the test's view of the job, its pods and the node."""

    def __init__(self, objects: Objects, kubelet: Kubelet, lc: RealLC, job: str) -> None:
        self.objects = objects
        self.kubelet = kubelet
        self.lc = lc
        self.job = job

    def wait_state(self, state: str, count: int = 1, timeout: float = STAGE_TIMEOUT) -> None:
        wait_until(
            lambda: self.objects.states(KIND, self.job).count(state) >= count,
            timeout,
            f"{self.job} reaching {state} x{count} (LC log:\n{self.lc.tail()})",
        )

    def pod(self, worker_type: str, index: int) -> dict[str, Any]:
        pods = self.objects.wait_pods(KIND, self.job, worker_type, index + 1, STAGE_TIMEOUT)
        return pods[index]

    def stage_input(self, stage: str, round_: int) -> dict[str, Any]:
        """The input of the `round_`-th `<stage>/Ready` condition (the LC's data)."""
        import json

        conds = self.objects.status(KIND, self.job).get("conditions") or []
        ready = [
            c
            for c in conds
            if str(c.get("stage", "")).lower() == stage and c.get("type") == "Ready"
        ]
        data = json.loads(ready[round_ - 1].get("data") or "{}")
        return dict(data.get("input") or {})

    def finish(self, pod: dict[str, Any], kind: str, results: list[dict[str, Any]]) -> None:
        """The worker reports to the LC, then its pod exits Succeeded."""
        name = pod["metadata"]["name"]
        self.kubelet.run(name)
        status = self.lc.report(
            name,
            namespace=self.objects.ns,
            owner_kind=OWNER_KIND,
            owner_name=self.job,
            kind=kind,
            status="completed",
            results=results,
        )
        assert status == 200, self.lc.tail()
        self.kubelet.succeed(name)

    def train_round(self, round_: int) -> str:
        """Round `round_`'s training: returns the trained pb model's node-local URL."""
        self.wait_state("Train/Ready", round_)
        given = self.stage_input("train", round_)
        assert given.get("dataURL"), given
        trained = f"{given['outputDir']}/model.pb"
        self.lc.path(trained).parent.mkdir(parents=True, exist_ok=True)
        self.lc.path(trained).write_bytes(f"model of round {round_}".encode())
        results = [
            {"format": "pb", "url": trained},
            {"format": "ckpt", "url": f"{given['outputDir']}/model.ckpt"},
        ]
        self.finish(self.pod("train", round_ - 1), "train", results)
        return trained

    def eval_round(self, round_: int, trained: str, deployed: str) -> None:
        self.wait_state("Eval/Ready", round_)
        results = [
            {"format": "pb", "url": trained, "metrics": {"precision": [0.9]}},
            {"format": "pb", "url": deployed, "metrics": {"precision": [0.6]}},
        ]
        self.finish(self.pod("eval", round_ - 1), "eval", results)


def in_order(states: list[str], wanted: list[str]) -> bool:
    """`wanted` is a subsequence of `states` (pod phases may add states between)."""
    it = iter(states)
    return all(w in it for w in wanted)


@pytest.fixture()
def objects(client: kubernetes.client.ApiClient, ns: str) -> Objects:
    return Objects(client, ns)


def start_il(
    objects: Objects,
    kubelet: Kubelet,
    real_lc: Callable[[str], RealLC],
    tmp_path: Path,
    samples: int = 200,
) -> tuple[ILWorld, dict[str, Any]]:
    lc = real_lc("edge-il")
    deploy_model = tmp_path / "deployed" / "saved_model.pb"
    deploy_model.parent.mkdir(parents=True)
    deploy_model.write_bytes(b"v0")
    docs = il_inputs(lc.node, deploy_model, samples)
    dataset = next(d for d in docs if d["kind"] == "Dataset")
    write_index(lc, dataset["spec"]["url"], samples)
    for d in docs:
        objects.create(d)
    job = next(d for d in docs if d["kind"] == KIND)
    return ILWorld(objects, kubelet, lc, job["metadata"]["name"]), dataset


def test_full_cycle_to_round_two(
    objects: Objects,
    kubelet: Kubelet,
    gm: GMHarness,
    real_lc: Callable[[str], RealLC],
    tmp_path: Path,
) -> None:
    world, dataset = start_il(objects, kubelet, real_lc, tmp_path)
    deployed = str(tmp_path / "deployed" / "saved_model.pb")

    # the LC counted the index file and the count reached the Dataset's status
    wait_until(
        lambda: (
            objects.status("Dataset", dataset["metadata"]["name"]).get("numberOfSamples") == 200
        ),
        STAGE_TIMEOUT,
        "the dataset's sample count in its status",
    )
    trained = world.train_round(1)
    world.eval_round(1, trained, deployed)

    # the LC's deploy trigger fired (delta 0.3 > 0.1): it copied the model, said ready
    world.wait_state("Deploy/Completed")
    # (it copies without truncating: a longer old model would keep its tail)
    assert Path(deployed).read_bytes() == b"model of round 1"
    inference = world.pod("inference", 0)
    assert inference["spec"]["nodeName"] == world.lc.node
    states = objects.states(KIND, world.job)
    assert in_order(
        states,
        [
            "Train/Ready",
            "Train/Completed",
            "Eval/Ready",
            "Eval/Completed",
            "Deploy/Ready",
            "Deploy/Completed",
        ],
    ), states

    # round 2: the GM waits for the LC's next train trigger, which new samples fire
    # at its next dataset poll; it trains from round 1's model of the initial format
    world.wait_state("Train/Waiting", 2)
    write_index(world.lc, dataset["spec"]["url"], 200, start=200)
    world.wait_state("Train/Ready", 2, timeout=90)
    round_two = world.stage_input("train", 2)
    assert [m["url"] for m in round_two["models"]] == ["/output/train/1/model.ckpt"]
    assert round_two["outputDir"] == "/output/train/2"
