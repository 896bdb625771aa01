"""The fault suite: 200 IL jobs through a whole cycle while the API server and the GM fail.

Under 10 % 5xx and 5 % 409 on the GM's writes, lost answers, watches that end every
200 events, forced 410s, a GM killed and restarted mid-run and LCs that disconnect,
every job converges (Train -> Eval -> Deploy -> Train/Waiting), no stage gets a second
pod, and every report the GM accepted is recorded exactly once.

Lost answers to pod creates (the GM cannot tell whether its pod exists) run as a case
of their own: there "0 duplicate pods" rests on the API look-up before a retried create.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from incremental_learning.helpers import (
    DS_NODE,
    LABEL,
    WORKER_NODE,
    create_dependencies,
    sample_job,
)
from support.waiting import poll

from sedna.embedded.apiserver import APIServer
from sedna.runtime.clock import FakeClock

from .conftest import GM, Api, GMFactory, LCFactory

JOBS = 200
MODEL_URL = "/model/frozen.pb"  # both sample Models
STATUS = ("incrementallearningjobs/status",)
TRAIN_INPUT: dict[str, Any] = {
    "models": [{"format": "ckpt", "url": MODEL_URL}],
    "dataURL": "/data/train/1.txt",
    "outputDir": "/output/train/1",
}
EVAL_INPUT: dict[str, Any] = {
    "models": [{"format": "ckpt", "url": "/output/train/1/model.pb"}],
    "dataURL": "/data/eval/1.txt",
}
DEPLOY_INPUT: dict[str, Any] = {"models": [{"format": "ckpt", "url": "/output/eval/best.pb"}]}
# the conditions that only LC reports append, one each per cycle
REPORTED = ("Train/Ready", "Train/Completed", "Eval/Ready", "Deploy/Ready")


class Run:
    """The suite's view: all jobs at once, by LIST, not one GET per job."""

    def __init__(self, api: Api, names: list[str]) -> None:
        self.api = api
        self.names = names

    def states(self) -> dict[str, list[str]]:
        items = self.api.jobs.list(self.api.ns)["items"]
        return {
            j["metadata"]["name"]: [
                f"{c['stage']}/{c['type']}" for c in (j.get("status") or {}).get("conditions") or []
            ]
            for j in items
        }

    def wait_all(self, state: str, timeout: float = 60.0) -> None:
        def done() -> bool:
            states = self.states()
            return all(states.get(n, [""])[-1:] == [state] for n in self.names)

        def stuck() -> str:
            states = self.states()
            late = [n for n in self.names if states.get(n, [""])[-1:] != [state]]
            return f"{len(late)} job(s) not at {state}, e.g. {late[:3]}: {states.get(late[0])}"

        poll(done, timeout, interval=0.25, failure=lambda _: stuck())

    def pods(self, worker_type: str) -> dict[str, list[dict[str, Any]]]:
        sel = f"{LABEL}worker-type={worker_type}"
        out: dict[str, list[dict[str, Any]]] = {n: [] for n in self.names}
        for p in self.api.pods.list(self.api.ns, label_selector=sel)["items"]:
            out.setdefault(p["metadata"]["labels"][f"{LABEL}name"], []).append(p)
        return out

    def set_phases(self, worker_type: str, phase: str) -> None:
        for pods in self.pods(worker_type).values():
            for p in pods:
                if p["status"].get("phase") != phase:
                    self.api.set_phase(p["metadata"]["name"], phase)


def _faults(srv: APIServer, *, lose_pod_creates: bool) -> None:
    f = srv.faults
    f.fail(500, probability=0.10, verbs=("update", "create"), resources=(
        *STATUS, "pods", "events"))  # fmt: skip
    f.fail(409, probability=0.05, verbs=("update",), resources=STATUS)
    f.lose_responses(every=13, verbs=("update",), resources=STATUS)
    if lose_pod_creates:
        f.lose_responses(every=17, verbs=("create",), resources=("pods",))
    f.close_watches_after(200)


def _report_all(lc: Any, ns: str, names: list[str], phase: str, status: str, inp: Any) -> None:
    for name in names:
        lc.report(ns, phase, status, name=name, input=inp)


@pytest.mark.parametrize(
    "lose_pod_creates", [False, True], ids=["faults", "faults+lost-pod-creates"]
)
def test_200_jobs_converge_under_faults(
    lose_pod_creates: bool,
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    sample_dir: Path,
    embedded_apiserver: APIServer,
) -> None:
    clock = FakeClock(wall_start=datetime.now(UTC).replace(microsecond=0))
    stepper = _Stepper(clock)
    stepper.start()
    try:
        _run_suite(lose_pod_creates, clock, api, make_gm, make_lc, sample_dir,
                   embedded_apiserver)  # fmt: skip
    finally:
        stepper.stop()


class _Stepper(threading.Thread):
    """Virtual time for the GM: its backoffs (the controller's, the report retries')
    pass quickly, while the API server and the tests run in real time."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(name="fault-suite-clock", daemon=True)
        self.clock = clock
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(0.01):
            self.clock.step(0.5)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(5)


def _run_suite(
    lose_pod_creates: bool,
    clock: FakeClock,
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    sample_dir: Path,
    embedded_apiserver: APIServer,
) -> None:
    gm: GM = make_gm(clock=clock)
    connect: Callable[[GM], tuple[Any, Any]] = lambda g: (  # noqa: E731
        make_lc(g, DS_NODE),
        make_lc(g, WORKER_NODE),
    )
    ds_lc, node_lc = connect(gm)
    create_dependencies(api, sample_dir)
    names = [f"job-{i:03d}" for i in range(JOBS)]
    run = Run(api, names)
    for name in names:
        api.create(sample_job(sample_dir, name=name))
    run.wait_all("Train/Waiting")
    _faults(embedded_apiserver, lose_pod_creates=lose_pod_creates)
    ns = api.ns

    # Train: the dataset node's LC says ready, the GM makes the train pods
    _report_all(ds_lc, ns, names, "train", "ready", TRAIN_INPUT)
    run.wait_all("Train/Starting")
    run.set_phases("train", "Running")
    run.wait_all("Train/Running")
    embedded_apiserver.faults.gone_for_next_watches(3)  # forced 410s on the next resumes

    # the GM is killed and restarted mid-run; the LCs lose their connections
    gm.stop()
    ds_lc.close()
    node_lc.close()
    gm = make_gm(clock=clock)
    ds_lc, node_lc = connect(gm)
    _report_all(node_lc, ns, names, "train", "completed", {**TRAIN_INPUT})
    run.wait_all("Eval/Waiting")
    run.set_phases("train", "Succeeded")

    # Eval; one LC drops and reconnects halfway through its reports
    _report_all(ds_lc, ns, names[: JOBS // 2], "eval", "ready", EVAL_INPUT)
    ds_lc.close()
    ds_lc = make_lc(gm, DS_NODE)
    _report_all(ds_lc, ns, names[JOBS // 2 :], "eval", "ready", EVAL_INPUT)
    run.wait_all("Eval/Starting")
    run.set_phases("eval", "Running")
    run.wait_all("Eval/Running")
    run.set_phases("eval", "Succeeded")
    run.wait_all("Deploy/Waiting")

    # Deploy: the worker node's LC says ready; the cycle ends at Train/Waiting
    _report_all(node_lc, ns, names, "deploy", "ready", DEPLOY_INPUT)
    run.wait_all("Train/Waiting")
    embedded_apiserver.faults.reset()

    states = run.states()
    for name in names:
        counts = Counter(states[name])
        wrong = {s: counts[s] for s in REPORTED if counts[s] != 1}
        assert not wrong, f"{name}: reported states counted {wrong}; conditions {states[name]}"
    for worker_type in ("train", "eval"):
        per_job = run.pods(worker_type)
        duplicated = {n: len(p) for n, p in per_job.items() if len(p) != 1}
        assert not duplicated, (worker_type, duplicated)
