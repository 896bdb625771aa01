"""The simulated LC's federated-learning play: rounds on time, the last one with metrics
when a training worker exits, per job and node, restarted by a new generation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from sedna.embedded.lc import SimulatedLC
from sedna.embedded.plays import default_plays
from sedna.embedded.plays.federated_learning import FL_KIND, FederatedLearningPlay
from sedna.runtime.clock import FakeClock


@dataclass
class _LC:
    """What a play uses of its LC: the node, the clock and `report`."""

    node: str
    clock: FakeClock = field(default_factory=FakeClock)
    reports: list[tuple[str, str, str, Any]] = field(default_factory=list)

    def report(self, namespace: str, kind: str, name: str, payload: Any) -> None:
        self.reports.append((namespace, kind, name, payload))

    def rounds(self) -> list[int]:
        return [p["output"]["ownerInfo"]["currentRound"] for *_, p in self.reports]


def _job(generation: int = 1, exit_round: str | None = "4") -> dict[str, Any]:
    env = [] if exit_round is None else [{"name": "exit_round", "value": exit_round}]
    return {
        "kind": "FederatedLearningJob",
        "metadata": {"namespace": "ns", "name": "fl", "generation": generation},
        "spec": {
            "aggregationWorker": {
                "model": {"name": "m"},
                "template": {"spec": {"nodeName": "cloud", "containers": [{"env": env}]}},
            },
            "trainingWorkers": [
                {"template": {"spec": {"nodeName": "edge1"}}},
                {"template": {"spec": {"nodeSelector": {"kubernetes.io/hostname": "edge2"}}}},
            ],
        },
    }


def _train_pod(owner_kind: str = "FederatedLearningJob") -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": "ns",
            "labels": {"federatedlearningjob.sedna.io/worker-type": "train"},
            "ownerReferences": [{"kind": owner_kind, "name": "fl", "controller": True}],
        }
    }


def test_the_play_is_a_default_play() -> None:
    assert any(isinstance(p, FederatedLearningPlay) for p in default_plays())


def test_rounds_then_the_last_one_with_metrics() -> None:
    play = FederatedLearningPlay(round_seconds=1.0)
    lc = _LC("edge1")
    sim = cast(SimulatedLC, lc)
    play.on_insert(sim, FL_KIND, "ns", "fl", _job())
    for _ in range(6):
        lc.clock.step(1.0)
        play.on_tick(sim)
    assert lc.rounds() == [1, 2, 3]  # up to the round before exit_round
    assert play.on_worker_finished(sim, _train_pod())
    assert lc.rounds() == [1, 2, 3, 4]
    ns, kind, name, last = lc.reports[-1]
    assert (ns, kind, name, last["status"]) == ("ns", FL_KIND, "fl", "completed")
    assert last["output"]["models"][0]["metrics"] == {"accuracy": 0.9, "loss": 0.3}
    play.on_worker_finished(sim, _train_pod())  # a second worker here: reported once
    lc.clock.step(5.0)
    play.on_tick(sim)
    assert lc.rounds() == [1, 2, 3, 4]
    # a spec change (new generation) starts the rounds again
    play.on_insert(sim, FL_KIND, "ns", "fl", _job(generation=2))
    lc.clock.step(1.0)
    play.on_tick(sim)
    assert lc.rounds()[-1] == 1


def test_a_node_without_training_workers_and_other_kinds_stay_quiet() -> None:
    play = FederatedLearningPlay()
    cloud = _LC("cloud")
    play.on_insert(cast(SimulatedLC, cloud), FL_KIND, "ns", "fl", _job(exit_round=None))
    cloud.clock.step(10.0)
    play.on_tick(cast(SimulatedLC, cloud))
    assert cloud.reports == []
    edge2 = _LC("edge2")  # named by a hostname selector
    play2 = FederatedLearningPlay()
    play2.on_insert(cast(SimulatedLC, edge2), FL_KIND, "ns", "fl", _job(exit_round=None))
    assert not play2.on_worker_finished(
        cast(SimulatedLC, edge2), _train_pod("IncrementalLearningJob")
    )
    assert play2.on_worker_finished(cast(SimulatedLC, edge2), _train_pod())
    assert edge2.rounds() == [3]  # exit_round defaults to 3
    play2.on_delete(cast(SimulatedLC, edge2), FL_KIND, "ns", "fl")
    assert play2.jobs == {}


def _finished_job(status: dict[str, Any], generation: int = 1) -> dict[str, Any]:
    job = _job(generation)
    job["status"] = status
    return job


SUCCEEDED = {
    "phase": "Succeeded",
    "conditions": [
        {"type": "Training", "status": "True", "message": "Round 3 reached"},
        {"type": "Complete", "status": "True"},
    ],
}


def test_a_job_the_gm_sends_finished_is_not_trained_again() -> None:
    """After a restart the GM inserts every job again, the finished ones too."""
    for status in (
        SUCCEEDED,
        {"phase": "Failed"},
        {"conditions": [{"type": "Failed", "status": "True"}]},
        {"conditions": [{"type": "Complete", "status": "True"}]},
    ):
        play = FederatedLearningPlay(round_seconds=1.0)
        lc = _LC("edge1")
        sim = cast(SimulatedLC, lc)
        play.on_insert(sim, FL_KIND, "ns", "fl", _finished_job(status))
        for _ in range(6):
            lc.clock.step(1.0)
            play.on_tick(sim)
        assert play.on_worker_finished(sim, _train_pod())
        assert lc.reports == [], status
        assert play.jobs["ns/fl"].done


def test_a_running_job_that_the_gm_then_sends_finished_stops() -> None:
    play = FederatedLearningPlay(round_seconds=1.0)
    lc = _LC("edge1")
    sim = cast(SimulatedLC, lc)
    play.on_insert(sim, FL_KIND, "ns", "fl", _job())
    lc.clock.step(1.0)
    play.on_tick(sim)
    assert lc.rounds() == [1]
    play.on_insert(sim, FL_KIND, "ns", "fl", _finished_job(SUCCEEDED))
    lc.clock.step(5.0)
    play.on_tick(sim)
    play.on_worker_finished(sim, _train_pod())
    assert lc.rounds() == [1]


def test_status_that_is_not_finished_or_malformed_still_trains() -> None:
    for status in (
        {"phase": "Running"},
        {"conditions": [{"type": "Complete", "status": "False"}]},
        {"conditions": "Complete"},
        {"conditions": [None, "Complete", {"type": "Complete"}]},
        "Succeeded",
        None,
    ):
        play = FederatedLearningPlay(round_seconds=1.0)
        lc = _LC("edge1")
        sim = cast(SimulatedLC, lc)
        job = _job()
        job["status"] = status
        play.on_insert(sim, FL_KIND, "ns", "fl", job)
        lc.clock.step(1.0)
        play.on_tick(sim)
        assert lc.rounds() == [1], status
