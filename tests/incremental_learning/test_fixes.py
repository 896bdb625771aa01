"""One test per place where Sedna's Go controller is wrong; each fails on its behaviour."""

from __future__ import annotations

import base64
import json
import threading
from pathlib import Path
from typing import Any

from sedna.embedded.apiserver import APIServer
from sedna.runtime import DeletedFinalStateUnknown

from .conftest import GMFactory, LCFactory
from .helpers import (
    DS_NODE,
    JOB,
    LABEL,
    TRAIN_INPUT,
    WORKER_NODE,
    Api,
    create_dependencies,
    sample_dataset,
    sample_job,
    sample_model,
    start_sample_job,
    start_stage,
    wait_until,
    whole_second_clock,
)

KIND = "incrementallearningjob"


def _idle(gm: Any) -> None:
    assert gm.controller.wait_idle(5.0)


def test_1_inference_create_failure_is_reported_and_retried_with_backoff(
    api: Api, make_gm: GMFactory, embedded_apiserver: APIServer, sample_dir: Path
) -> None:
    clock = whole_second_clock()
    gm = make_gm(clock=clock)
    create_dependencies(api, sample_dir)
    # A Model or Dataset reaching the GM's cache after the job wakes the job at once (fix
    # 6); wait for them here, so the retry can only come from the backoff.
    ctl = gm.controller
    wait_until(
        lambda: (
            ctl.datasets.lister.get(api.ns, "incremental-dataset")
            and ctl.models.lister.get(api.ns, "initial-model")
            and ctl.models.lister.get(api.ns, "deploy-model")
        ),
        what="dependencies in the GM's caches",
    )
    embedded_apiserver.faults.fail(500, verbs=["create"], resources=["pods"], count=1)
    api.create(sample_job(sample_dir))
    api.wait_event("InferenceWorkerFailed", "cannot create the inference worker")
    _idle(gm)
    assert api.live_pods("inference") == []
    assert api.states() == []  # no startTime/condition until the worker exists
    clock.step(10.0)  # the first backoff
    wait_until(lambda: api.live_pods("inference"), what="inference worker after backoff")
    api.wait_latest("Train/Waiting")
    assert api.job()["status"]["startTime"]


def test_2_inference_secret_error_is_reported(
    api: Api, make_gm: GMFactory, sample_dir: Path
) -> None:
    clock = whole_second_clock()
    gm = make_gm(clock=clock)
    deploy = sample_model(sample_dir, "deploy-model")
    deploy["spec"]["url"] = "s3://models/deploy/frozen.pb"
    deploy["spec"]["credentialName"] = "s3-creds"
    api.create(sample_model(sample_dir, "initial-model"))
    api.create(deploy)
    api.create(sample_dataset(sample_dir))
    api.create(sample_job(sample_dir))
    msg = api.wait_event("InferenceWorkerFailed", "s3-creds")
    assert "deploy-model" in msg and "spec.credentialName" in msg
    _idle(gm)
    assert api.live_pods("inference") == []  # Sedna creates it without credentials

    api.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s3-creds", "annotations": {"s3-endpoint": "s3.example"}},
            "data": {
                "ACCESS_KEY_ID": base64.b64encode(b"ak").decode(),
                "SECRET_ACCESS_KEY": base64.b64encode(b"sk").decode(),
            },
        }
    )
    clock.step(10.0)
    (pod,) = wait_until(lambda: api.live_pods("inference"), what="inference worker")
    init = pod["spec"]["initContainers"][0]
    env = {e["name"]: e for e in init["env"]}
    assert env["S3_ENDPOINT_URL"]["value"] == "https://s3.example"
    assert env["ACCESS_KEY_ID"]["valueFrom"]["secretKeyRef"]["name"] == "s3-creds"


def _pod(api: Api, name: str, worker_type: str, phase: str) -> None:
    job = api.job()
    meta = job["metadata"]
    api.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "labels": {
                    f"{LABEL}name": meta["name"],
                    f"{LABEL}uid": meta["uid"],
                    f"{LABEL}worker-type": worker_type,
                },
                "ownerReferences": [
                    {
                        "apiVersion": "sedna.io/v1alpha1",
                        "kind": "IncrementalLearningJob",
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": {"nodeName": WORKER_NODE, "containers": [{"name": "w", "image": "x"}]},
        }
    )
    api.set_phase(name, phase)


def test_3_stage_pod_is_found_by_worker_type_label(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    # A train worker whose name does not end in "-train-xxxxx" (Sedna never finds it and
    # starts a second one), and a failed eval worker named like a train worker (Sedna
    # takes it for the train pod and fails the stage).
    _pod(api, "trainer-0", "train", "Pending")
    _pod(api, f"{JOB}-train-decoy", "eval", "Failed")
    start_stage(api, lc, "train", TRAIN_INPUT)
    starting = api.conditions()[-1]
    assert starting["reason"] == "WorkerAdopted"
    assert json.loads(starting["data"]) == {"pod": "trainer-0"}
    api.set_phase_and_wait("trainer-0", "Running", "Train/Running")
    assert [p["metadata"]["name"] for p in api.worker_pods("train")] == ["trainer-0"]
    api.set_phase_and_wait("trainer-0", "Succeeded", "Eval/Waiting")


def test_4_conditions_are_bounded_and_keep_the_latest_of_each_stage(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    # deploy/ready comes from a node the job is not routed to (no hot update)
    gm = make_gm(options={"maxConditions": 6}, websocket={"authorizeReports": False})
    ds_lc = make_lc(gm, DS_NODE)
    node_lc = make_lc(gm, WORKER_NODE)
    start_sample_job(api, sample_dir)
    for cycle in (1, 2):
        start_stage(api, ds_lc, "train", TRAIN_INPUT)
        train = api.pending_pod("train")
        api.set_phase_and_wait(train["metadata"]["name"], "Running", "Train/Running")
        out = {"models": [{"format": "ckpt", "url": f"/out/{cycle}.pb"}]}
        node_lc.report(api.ns, "train", "completed", input=TRAIN_INPUT, output=out)
        api.wait_latest("Eval/Waiting")
        api.set_phase(train["metadata"]["name"], "Succeeded")
        start_stage(api, ds_lc, "eval", {"models": out["models"], "dataURL": "/e"})
        ev = api.pending_pod("eval")
        api.set_phase_and_wait(ev["metadata"]["name"], "Succeeded", "Deploy/Waiting")
        node_lc.report(api.ns, "deploy", "ready", input={"models": out["models"]})
        api.wait_latest("Train/Waiting")
        conds = api.conditions()
        assert len(conds) == 6
        assert {c["stage"] for c in conds} == {"Train", "Eval", "Deploy"}
        # the LC's latest trained model is still there for it to find
        data = [c["data"] for c in conds if c["stage"] == "Train" and c["type"] == "Completed"]
        assert json.loads(data[-1])["output"]["models"][0]["url"] == f"/out/{cycle}.pb"


def test_5_failing_stage_backs_off_exponentially(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    clock = whole_second_clock()
    gm = make_gm(clock=clock)
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    for failures, delay in ((1, 10), (2, 20), (3, 40)):
        start_stage(api, lc, "train", TRAIN_INPUT)
        pod = api.pending_pod("train")
        api.set_phase_and_wait(pod["metadata"]["name"], "Failed", "Train/Failed")
        api.wait_event("BackOff", f"({failures} failure(s) in a row); back to Train in {delay}s")
        _idle(gm)
        clock.step(delay - 1)
        _idle(gm)
        assert api.latest() == "Train/Failed"  # Sedna retries at once
        clock.step(1)
        api.wait_latest("Train/Waiting")
        assert api.conditions()[-1]["reason"] == "RetryAfterFailure"


def test_5b_backoff_is_capped_at_six_minutes() -> None:
    from sedna_incremental_learning.conditions import failure_backoff

    assert [failure_backoff(n, 10, 360) for n in range(1, 9)] == [
        10, 20, 40, 80, 160, 320, 360, 360,
    ]  # fmt: skip


def test_6_missing_dataset_is_reported_and_job_wakes_when_it_appears(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    # without its Dataset the job is routed nowhere: only an unchecked LC could report
    gm = make_gm(websocket={"authorizeReports": False})
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir, dataset=False)
    lc.report(api.ns, "train", "ready", input=TRAIN_INPUT)
    msg = api.wait_event("MissingDataset")
    assert f"Dataset {api.ns}/incremental-dataset" in msg
    # (the Waiting condition before it names the missing Dataset too, see test_missing_*)
    ready = wait_until(
        lambda: (
            (c := api.conditions()[-1]).get("reason") == "MissingDataset"
            and c.get("type") == "Ready"
            and c
        ),
        what="Ready condition naming the missing Dataset",
    )
    assert ready["type"] == "Ready" and "incremental-dataset" in ready["message"]
    _idle(gm)
    assert api.worker_pods("train") == []
    api.create(sample_dataset(sample_dir))  # no resync in 3600 s: the watch wakes the job
    api.wait_latest("Train/Starting")
    assert len(api.worker_pods("train")) == 1


def test_6b_missing_model_on_first_sync(api: Api, make_gm: GMFactory, sample_dir: Path) -> None:
    make_gm()
    api.create(sample_dataset(sample_dir))
    api.create(sample_job(sample_dir))
    msg = api.wait_event("MissingModel")
    assert f"Model {api.ns}/deploy-model" in msg and "spec.deploySpec.model.name" in msg
    # the job shows its state, as LL's does for a missing Dataset (Sedna's stays blank)
    waiting = wait_until(
        lambda: (c := api.conditions()) and c[-1].get("reason") == "MissingModel" and c[-1],
        what="the waiting condition naming the Model",
    )
    assert (waiting["stage"], waiting["type"]) == ("Train", "Waiting")
    assert "spec.deploySpec.model.name" in waiting["message"]
    assert "startTime" not in api.job()["status"]
    api.create(sample_model(sample_dir, "initial-model"))
    api.create(sample_model(sample_dir, "deploy-model"))
    wait_until(lambda: api.live_pods("inference"), what="the inference worker")
    wait_until(
        lambda: "reason" not in api.conditions()[-1] and api.job()["status"].get("startTime"),
        what="the note cleared and the job started",
    )
    assert api.states() == ["Train/Waiting"]
    assert len(api.live_pods("inference")) == 1


def test_6c_missing_model_and_dataset_on_first_sync_are_named_in_turn(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    api.create(sample_job(sample_dir))
    wait_until(
        lambda: (c := api.conditions()) and c[-1].get("reason") == "MissingModel",
        what="the waiting condition naming the deploy Model",
    )
    api.create(sample_model(sample_dir, "deploy-model"))
    api.create(sample_model(sample_dir, "initial-model"))
    waiting = wait_until(
        lambda: (c := api.conditions()[-1]).get("reason") == "MissingDataset" and c,
        what="the waiting condition naming the Dataset",
    )
    assert "spec.dataset.name" in waiting["message"]
    assert len(api.live_pods("inference")) == 1
    api.create(sample_dataset(sample_dir))
    wait_until(lambda: "reason" not in api.conditions()[-1], what="the note cleared")
    assert api.states() == ["Train/Waiting"]
    start_stage(api, lc, "train", TRAIN_INPUT)


def test_7_deletes_reach_every_lc_even_as_tombstones(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    gm = make_gm()
    ds_lc = make_lc(gm, DS_NODE)
    node_lc = make_lc(gm, WORKER_NODE)
    start_sample_job(api, sample_dir)
    start_stage(api, ds_lc, "train", TRAIN_INPUT)
    (pod,) = api.live_pods("train")
    api.set_phase_and_wait(pod["metadata"]["name"], "Running", "Train/Running")
    node_lc.wait_job_state("Train/Running")

    # a delete the informer missed arrives as a tombstone with the last known state
    last = gm.controller.jobs.lister.get(api.ns, JOB)
    gm.controller._job_deleted(DeletedFinalStateUnknown(f"{api.ns}/{JOB}", last))
    for lc in (ds_lc, node_lc):
        lc.wait_for(KIND, "delete", JOB)


def test_7c_a_delete_the_watch_missed_reaches_the_lcs_through_a_real_tombstone(
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    sample_dir: Path,
    embedded_apiserver: APIServer,
) -> None:
    faults = embedded_apiserver.faults
    faults.close_watches_after(1)  # every stream ends after one event; informers re-watch
    try:
        gm = make_gm()
        ds_lc = make_lc(gm, DS_NODE)
        create_dependencies(api, sample_dir)
        api.create(sample_job(sample_dir))
        ds_lc.wait_job_state("Train/Waiting")
        jobs = gm.controller.jobs
        # Blind the job informer: its stream ends on the next event and re-watching fails.
        faults.fail(500, verbs=["watch"], resources=["incrementallearningjobs"])
        errors = jobs.stats.errors
        api.jobs.patch(api.ns, JOB, {"metadata": {"annotations": {"poke": "1"}}})
        wait_until(lambda: jobs.stats.errors > errors, what="job watch failing")
        api.jobs.delete(api.ns, JOB)  # the informer cannot see this
        relists = jobs.stats.relists_after_gone
        faults.reset()
        faults.compact()  # its resume gets 410 Gone: relist, and the job is missing
        ds_lc.wait_for(KIND, "delete", JOB)
        assert jobs.stats.relists_after_gone > relists  # it came as a tombstone, not an event
    finally:
        faults.reset()


def test_7b_delete_reaches_dataset_node_when_dataset_is_gone(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    gm = make_gm()
    ds_lc = make_lc(gm, DS_NODE)
    create_dependencies(api, sample_dir)
    api.create(sample_job(sample_dir))
    ds_lc.wait_job_state("Train/Waiting")
    api.datasets.delete(api.ns, "incremental-dataset")
    wait_until(lambda: gm.controller.datasets.lister.get(api.ns, "incremental-dataset") is None)
    api.jobs.delete(api.ns, JOB)
    ds_lc.wait_for(KIND, "delete", JOB)


def test_8_worker_count_is_a_feature_option(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    gm = make_gm(workers=3)
    assert gm.controller.workers == 3
    names = [t.name for t in threading.enumerate() if t.is_alive()]
    assert len([n for n in names if n.startswith("IncrementalLearningJob-worker-")]) == 3
    # and they all work: several jobs progress
    create_dependencies(api, sample_dir)
    for i in range(4):
        api.create(sample_job(sample_dir, name=f"job-{i}"))
    for i in range(4):
        api.wait_latest("Train/Waiting", name=f"job-{i}")
