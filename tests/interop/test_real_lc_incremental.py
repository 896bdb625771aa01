"""An IncrementalLearningJob through Sedna's real LC: its trigger fires from a real
dataset index file, the workers report to its REST API, it copies the trained model;
and the cycle goes on across a GM restart and a `kill -9` of the LC in its middle."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from sedna.testing import GMHarness, Kubelet, wait_until

from .inputs import Objects, example, on_node
from .peers import RealLC
from .staged import STAGE_TIMEOUT, StagedWorld, in_order, write_index

# the real LC sets the pace (10 s job ticks, 60 s dataset polls)
pytestmark = [pytest.mark.sedna_bin, pytest.mark.timeout(300)]

KIND = "IncrementalLearningJob"


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


def train_round(world: StagedWorld, round_: int) -> str:
    """Round `round_`'s training: returns the trained pb model's node-local URL."""
    world.wait_state("Train/Ready", round_)
    given = world.stage_input("train", round_)
    assert given.get("dataURL"), given
    trained = f"{given['outputDir']}/model.pb"
    world.write(trained, f"model of round {round_}".encode())
    results = [
        {"format": "pb", "url": trained},
        {"format": "pb", "url": f"{given['outputDir']}/model.pb"},
    ]
    world.finish(world.pod("train", round_ - 1), "train", results)
    return trained


def eval_results(trained: str, deployed: str) -> list[dict[str, Any]]:
    """The new model beats the deployed one by 0.3 (the LC's metrics are lists)."""
    return [
        {"format": "pb", "url": trained, "metrics": {"precision": [0.9]}},
        {"format": "pb", "url": deployed, "metrics": {"precision": [0.6]}},
    ]


@pytest.fixture()
def objects(client: kubernetes.client.ApiClient, ns: str) -> Objects:
    return Objects(client, ns)


def start_il(
    objects: Objects,
    kubelet: Kubelet,
    real_lc: Callable[[str], RealLC],
    tmp_path: Path,
    samples: int = 200,
) -> tuple[StagedWorld, dict[str, Any]]:
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
    return StagedWorld(objects, kubelet, lc, KIND, job["metadata"]["name"]), dataset


def test_full_cycle_to_round_two_across_a_gm_restart(
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
    trained = train_round(world, 1)
    world.wait_state("Eval/Ready")

    # the GM restarts while the eval worker runs; the LC dials it again and the
    # worker's report reaches the new GM
    eval_pod = world.pod("eval", 0)
    kubelet.run(eval_pod["metadata"]["name"])
    seen = len(world.lc.logs())
    gm.restart()
    wait_until(
        lambda: "websocket connects global manager" in world.lc.logs()[seen:],
        STAGE_TIMEOUT,
        "the LC to dial the restarted GM",
    )
    world.finish(eval_pod, "eval", eval_results(trained, deployed))

    # the LC's deploy trigger fired (delta 0.3 > 0.1): it copied the model, said ready
    world.wait_state("Deploy/Completed")
    # (it copies without truncating: a longer old model would keep its tail)
    assert Path(deployed).read_bytes() == b"model of round 1"
    inference = world.pod("inference", 0)
    assert inference["spec"]["nodeName"] == world.lc.node
    # the restarted GM made no second worker for a stage it had already started
    assert len(objects.worker_pods(KIND, world.job, "train")) == 1
    assert len(objects.worker_pods(KIND, world.job, "eval")) == 1
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
    assert [m["url"] for m in round_two["models"]] == ["/output/train/1/model.pb"]
    assert round_two["outputDir"] == "/output/train/2"


def test_cycle_survives_lc_kill_9(
    objects: Objects,
    kubelet: Kubelet,
    gm: GMHarness,
    real_lc: Callable[[str], RealLC],
    tmp_path: Path,
) -> None:
    world, dataset = start_il(objects, kubelet, real_lc, tmp_path)
    deployed = str(tmp_path / "deployed" / "saved_model.pb")
    world.wait_state("Train/Ready")
    train = world.pod("train", 0)
    kubelet.run(train["metadata"]["name"])
    given = world.stage_input("train", 1)
    trained = f"{given['outputDir']}/model.pb"
    world.write(trained, b"model of round 1")

    # the LC dies while the worker trains; a new one (same node, same disk) comes up
    # and must get from the GM everything the job needs: the job, its dataset, models
    world.lc.kill()
    seen = len(world.lc.logs())
    world.lc.start()
    for what in (
        f"ResourceKind:incrementallearningjob ResourceName:{world.job} Operation:insert",
        f"ResourceKind:dataset ResourceName:{dataset['metadata']['name']} Operation:insert",
    ):

        def received(what: str = what) -> bool:
            return what in world.lc.logs()[seen:]

        wait_until(
            received,
            10,
            f"the restarted LC to receive {what}",
        )
    results = [
        {"format": "pb", "url": trained},
        {"format": "pb", "url": f"{given['outputDir']}/model.pb"},
    ]
    world.report(train["metadata"]["name"], "train", results)
    world.wait_state("Train/Completed")
    kubelet.succeed(train["metadata"]["name"])
    world.wait_state("Eval/Ready")
    world.finish(world.pod("eval", 0), "eval", eval_results(trained, deployed))
    world.wait_state("Deploy/Completed")
    assert Path(deployed).read_bytes() == b"model of round 1"
    assert len(objects.worker_pods(KIND, world.job, "train")) == 1


def test_report_that_arrives_after_the_worker_exited(
    objects: Objects,
    kubelet: Kubelet,
    gm: GMHarness,
    real_lc: Callable[[str], RealLC],
    tmp_path: Path,
) -> None:
    """A worker reports to its LC and exits at once; the LC forwards the report a moment
    later, so the GM may see the pod Succeeded before the report. Played here in that
    order: the report must still move the job on."""
    world, _ = start_il(objects, kubelet, real_lc, tmp_path)
    world.wait_state("Train/Ready")
    given = world.stage_input("train", 1)
    trained = f"{given['outputDir']}/model.pb"
    world.write(trained, b"model of round 1")
    train = world.pod("train", 0)["metadata"]["name"]
    kubelet.run(train)
    kubelet.succeed(train)
    # the GM acted on the exit before the report came
    world.wait_state("Train/Completed")
    results = [
        {"format": "pb", "url": trained},
        {"format": "pb", "url": f"{given['outputDir']}/model.pb"},
    ]
    world.report(train, "train", results)

    def moved_on_or_crashed() -> bool:
        lc_died = world.lc.proc is None or world.lc.proc.poll() is not None
        return lc_died or "Eval/Ready" in world.states()

    wait_until(moved_on_or_crashed, STAGE_TIMEOUT, "Eval/Ready (or the LC's end)")
    assert world.lc.proc is not None and world.lc.proc.poll() is None, "the real LC crashed"
    assert world.stage_data("train", "Completed", 1)["output"]["models"][0]["url"] == trained
