"""Where Sedna's Go LL controller has a bug, we do better: tombstones, lookups, missing inputs."""

from __future__ import annotations

from pathlib import Path

from support.waiting import wait_until

from sedna.embedded.apiserver import APIServer
from sedna.runtime import DeletedFinalStateUnknown

from .conftest import GMFactory, LCFactory
from .helpers import (
    DATASET,
    DS_NODE,
    EVAL_INPUT,
    JOB,
    KIND,
    TRAIN_INPUT,
    TRAIN_OUTPUT,
    WORKER_NODE,
    Api,
    run_stage,
    sample_dataset,
    sample_job,
    start_sample_job,
)


def test_a_tombstone_delete_reaches_every_lc(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    """Go's syncToEdge casts the tombstone to a job, gets nil and dereferences it."""
    gm = make_gm()
    ds_lc = make_lc(gm, DS_NODE)
    node_lc = make_lc(gm, WORKER_NODE)
    start_sample_job(api, sample_dir)
    run_stage(api, ds_lc, "train", TRAIN_INPUT)
    node_lc.wait_job_state("Train/Running")

    last = gm.controller.jobs.lister.get(api.ns, JOB)
    gm.controller._job_deleted(DeletedFinalStateUnknown(f"{api.ns}/{JOB}", last))
    for lc in (ds_lc, node_lc):
        deleted = lc.wait_for(KIND, "delete", JOB)
        assert deleted.payload["kind"] == "LifelongLearningJob"


def test_a_delete_the_watch_missed_arrives_as_a_real_tombstone(
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
        api.create(sample_dataset(sample_dir))
        api.create(sample_job(sample_dir))
        ds_lc.wait_job_state("Train/Waiting")
        jobs = gm.controller.jobs
        faults.fail(500, verbs=["watch"], resources=["lifelonglearningjobs"])
        errors = jobs.stats.errors
        api.jobs.patch(api.ns, JOB, {"metadata": {"annotations": {"poke": "1"}}})
        wait_until(lambda: jobs.stats.errors > errors, what="job watch failing")
        api.jobs.delete(api.ns, JOB)  # the informer cannot see this
        relists = jobs.stats.relists_after_gone
        faults.reset()
        faults.compact()  # its resume gets 410 Gone: relist, and the job is missing
        ds_lc.wait_for(KIND, "delete", JOB)
        assert jobs.stats.relists_after_gone > relists
    finally:
        faults.reset()


def test_a_missing_dataset_is_named_and_the_job_wakes_when_it_appears(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    gm = make_gm()
    ds_lc = make_lc(gm, DS_NODE)
    api.create(sample_job(sample_dir))
    msg = api.wait_event("MissingDataset", f"Dataset {api.ns}/{DATASET}")
    assert "spec.dataset.name" in msg
    wait_until(lambda: api.conditions() and api.conditions()[-1].get("reason") == "MissingDataset")
    assert ds_lc.messages(KIND) == []  # no node to send it to yet
    api.create(sample_dataset(sample_dir))
    ds_lc.wait_job_state("Train/Waiting")  # sent as soon as the Dataset appeared
    run_stage(api, ds_lc, "train", TRAIN_INPUT)
    assert gm.controller.wait_idle(5.0)


def test_a_ready_report_without_input_blocks_with_the_field_named(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    """Go creates the pod with empty URLs (or errors without saying which input)."""
    gm = make_gm()
    ds_lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    ds_lc.report(api.ns, "eval", "ready", input={"dataURL": "/d.txt"})
    msg = api.wait_event("InvalidConditionData", "input.models: no model to evaluate")
    assert msg.startswith("status.conditions[1].data.input.models")
    ds_lc.report(api.ns, "train", "ready")
    api.wait_event("InvalidConditionData", "status.conditions[2].data.input: empty input")
    assert gm.controller.wait_idle(5.0)
    assert api.worker_pods("train") == [] and api.worker_pods("eval") == []
    # the LC's next, valid report moves the job on
    run_stage(api, ds_lc, "train", TRAIN_INPUT)


def test_a_new_round_never_takes_the_still_running_worker_of_the_last_one(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    """Go looks at the newest pod of the stage's type: when the last round's train worker
    reported but has not exited yet, the next Train/Ready sees it Running, creates no
    pod, and the old worker "runs" the new round on its old data."""
    gm = make_gm()
    ds_lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    old = run_stage(api, ds_lc, "train", TRAIN_INPUT)
    ds_lc.report(api.ns, "train", "completed", output=TRAIN_OUTPUT)
    api.wait_latest("Eval/Waiting")
    ev = run_stage(api, ds_lc, "eval", EVAL_INPUT)
    api.set_phase_and_wait(ev["metadata"]["name"], "Succeeded", "Deploy/Waiting")
    ds_lc.report(api.ns, "deploy", "completed")
    api.wait_latest("Train/Waiting")
    assert api.pods.get(api.ns, old["metadata"]["name"])["status"]["phase"] == "Running"

    ds_lc.report(api.ns, "train", "ready", input={**TRAIN_INPUT, "outputDir": "/output/train/2"})
    api.wait_latest("Train/Starting")
    names = [p["metadata"]["name"] for p in api.live_pods("train")]
    assert len(names) == 2 and old["metadata"]["name"] in names
    assert api.conditions()[-1]["reason"] == "WorkerCreated"
    assert gm.controller.wait_idle(5.0)


def test_a_create_whose_answer_was_lost_makes_no_second_worker(
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    sample_dir: Path,
    embedded_apiserver: APIServer,
) -> None:
    """The pod create commits but answers 504 (kube-apiserver does so when etcd is slow):
    Go retries from its cache and runs the stage twice; the stage machine checks first."""
    gm = make_gm()
    ds_lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    embedded_apiserver.faults.fail(
        504, verbs=["create"], resources=["pods"], count=1, after_commit=True
    )
    try:
        ds_lc.report(api.ns, "train", "ready", input=TRAIN_INPUT)
        api.wait_latest("Train/Starting", timeout=30)
    finally:
        embedded_apiserver.faults.reset()
    assert gm.controller.wait_idle(5.0)
    assert len(api.worker_pods("train")) == 1
