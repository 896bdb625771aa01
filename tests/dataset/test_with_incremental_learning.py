"""Both features together, with the embedded LC stand-in and no API fallback for it.

This is why the feature exists: a Go LC learns of a dataset only through the GM's
Dataset messages, so the job's train trigger can only fire once the Dataset feature
sent it. The LC stand-in gets no API client here, exactly like a Go LC.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sedna.embedded.lc import SimulatedLC
from sedna.runtime import FakeClock

from .conftest import GMFactory
from .helpers import Api, load_sample, sample_dataset, wait_until

DATASET = "incremental-dataset"  # the name the sample job gives
JOB = "helmet-detection-demo"


@pytest.fixture()
def lc_clock() -> FakeClock:
    return FakeClock()


@pytest.fixture()
def sim_lcs() -> Iterator[list[SimulatedLC]]:
    lcs: list[SimulatedLC] = []
    yield lcs
    for lc in lcs:
        lc.stop()


def sample_job(ref: Path) -> dict[str, Any]:
    job = load_sample(ref, "incrementallearningjob_v1alpha1.yaml")
    trigger = job["spec"]["trainSpec"]["trigger"]
    del trigger["timer"]  # the test must not depend on the time of day
    trigger["condition"]["threshold"] = 50
    return job


def test_job_triggers_on_a_lc_that_knows_the_dataset_only_from_the_gm(
    api: Api,
    make_gm: GMFactory,
    sim_lcs: list[SimulatedLC],
    lc_clock: FakeClock,
    sample_dir: Path,
) -> None:
    gm = make_gm(features=("dataset", "incremental_learning"))
    lc = SimulatedLC(
        "edge0", f"ws://127.0.0.1:{gm.port}/", kube=None, clock=lc_clock, reconnect_seconds=0.05
    )
    sim_lcs.append(lc)
    lc.start()
    wait_until(lc.connected.is_set, 5.0, "the LC to connect")

    for name in ("initial-model", "deploy-model"):
        model = load_sample(sample_dir, "model_v1alpha1.yaml")
        model["metadata"]["name"] = name
        api.create(model)
    ds = sample_dataset(sample_dir)
    ds["metadata"]["name"] = DATASET
    api.create(ds)
    api.create(sample_job(sample_dir))

    key = f"{api.ns}/{DATASET}"
    wait_until(lambda: key in lc.datasets and lc.datasets[key].from_gm, 5.0, "dataset at LC")

    def train_ready() -> bool:
        conds = (api.jobs.get(api.ns, JOB).get("status") or {}).get("conditions") or []
        return any((c["stage"], c["type"]) == ("Train", "Ready") for c in conds)

    # virtual time for the LC: its dataset grows, it reports counts and the trigger fires
    for _ in range(200):
        if train_ready() and (api.status(DATASET).get("numberOfSamples") or 0) > 0:
            break
        wait_until(lc_clock.has_waiters, 5.0, "the LC to wait for its next tick")
        lc_clock.step(0.5)
        time.sleep(0.01)
    else:
        raise AssertionError("no Train/Ready and dataset count within 100 s of virtual time")
    status = api.status(DATASET)
    assert status["numberOfSamples"] > 0 and status["updateTime"]
