"""A LifelongLearningJob through Sedna's real LC: the train trigger fires from a real
CSV dataset, the train worker builds the knowledge base, the eval worker reports the
models it kept, and the LC deploys the knowledge base index (it copies the eval's first
model to `<outputDir>/deploy/index.pkl`) before the GM starts the next round."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import kubernetes
import pytest

from sedna.testing import GMHarness, Kubelet, wait_until

from .inputs import Objects, example, on_node
from .peers import RealLC
from .staged import STAGE_TIMEOUT, StagedWorld, in_order, write_index

# the real LC sets the pace (10 s job ticks, 60 s dataset polls)
pytestmark = [pytest.mark.sedna_bin, pytest.mark.timeout(300)]

KIND = "LifelongLearningJob"


@pytest.fixture()
def objects(client: kubernetes.client.ApiClient, ns: str) -> Objects:
    return Objects(client, ns)


def test_full_cycle_deploys_the_knowledge_base(
    objects: Objects, kubelet: Kubelet, gm: GMHarness, real_lc: Callable[[str], RealLC]
) -> None:
    lc = real_lc("edge-ll")
    docs = [on_node(d, lc.node) for d in example("lifelong-learning")]
    dataset = next(d for d in docs if d["kind"] == "Dataset")
    # 200 samples, 160 of them for training: more than the trigger's 80
    write_index(lc, dataset["spec"]["url"], 200, header="path,label")
    for d in docs:
        objects.create(d)
    job = next(d for d in docs if d["kind"] == KIND)["metadata"]["name"]
    world = StagedWorld(objects, kubelet, lc, KIND, job)

    wait_until(
        lambda: (
            objects.status("Dataset", dataset["metadata"]["name"]).get("numberOfSamples") == 200
        ),
        STAGE_TIMEOUT,
        "the CSV dataset's count (its header is no sample)",
    )
    world.wait_state("Train/Ready")
    given = world.stage_input("train", 1)
    assert given["outputDir"] == "/output/train/1", given
    assert lc.path(given["dataURL"]).read_text().count("\n") == 160 + 1  # header + samples
    kb = f"{given['outputDir']}/index.pkl"
    world.write(kb, b"knowledge base of round 1")
    world.finish(world.pod("train", 0), "train", [{"format": "pkl", "url": kb}])

    # the LC hands the eval worker the trained knowledge base
    world.wait_state("Eval/Ready")
    assert [m["url"] for m in world.stage_input("eval", 1)["models"]] == [kb]
    evaluated = "/output/eval/1/index.pkl"
    world.write(evaluated, b"knowledge base kept by eval")
    # the LC copies the knowledge base into a folder it does not make itself
    lc.path("/output/deploy").mkdir(parents=True, exist_ok=True)
    results: list[dict[str, Any]] = [
        {"format": "pkl", "url": evaluated, "metrics": {"precision_score": [0.8]}}
    ]
    world.finish(world.pod("eval", 0), "eval", results)

    world.wait_state("Deploy/Completed")
    assert lc.path("/output/deploy/index.pkl").read_bytes() == b"knowledge base kept by eval"
    assert in_order(
        world.states(),
        ["Train/Ready", "Train/Completed", "Eval/Ready", "Eval/Completed", "Deploy/Ready"],
    ), world.states()
    deploy = world.stage_data("deploy", "Ready", 1)
    assert [m["url"] for m in deploy["input"]["models"]] == [evaluated]
    assert world.pod("inference", 0)["spec"]["nodeName"] == lc.node
    world.wait_state("Train/Waiting", 2)
