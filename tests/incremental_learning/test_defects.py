"""Defects found by trying IL as a new user would; each test failed before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import sedna_incremental_learning.plugin as il_plugin
from support.rbac import access_rules, denied_gm_calls, describe, feature_calls, gm_calls

from sedna.embedded.apiserver import ApiCall, APIServer

from .conftest import GMFactory, LCFactory
from .helpers import (
    DS_NODE,
    JOB,
    TRAIN_INPUT,
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


def test_rbac_grants_every_call_the_gm_makes_in_a_cycle(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, embedded_apiserver: APIServer,
    sample_dir: Path,
) -> None:  # fmt: skip
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    start_stage(api, lc, "train", TRAIN_INPUT)
    (pod,) = api.live_pods("train")
    api.set_phase_and_wait(pod["metadata"]["name"], "Running", "Train/Running")
    # the GM drops its ready-condition tag from the recorded pod: a pod patch
    wait_until(
        lambda: (
            "sedna-gm.io/ready-condition"
            not in (
                api.pods.get(api.ns, pod["metadata"]["name"])["metadata"].get("annotations") or {}
            )
        ),
        what="the tag dropped",
    )
    mine = {c for c in gm_calls(embedded_apiserver) if c.namespace == api.ns}
    assert ApiCall("patch", "", "pods", api.ns) in mine
    denied = [c for c in denied_gm_calls(embedded_apiserver) if c.namespace == api.ns]
    assert not denied, describe(denied)
    # and the feature declares each of its calls (the RBAC is to be generated from it)
    undeclared = access_rules(il_plugin.ACCESS).denied(feature_calls(mine))
    assert not undeclared, describe(undeclared)


def test_a_new_ready_never_adopts_a_pod_an_earlier_condition_recorded(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    clock = whole_second_clock()
    gm = make_gm(clock=clock)
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    start_stage(api, lc, "train", TRAIN_INPUT)
    (stale,) = api.live_pods("train")
    stale_name = stale["metadata"]["name"]
    api.set_phase_and_wait(stale_name, "Running", "Train/Running")
    # the LC says the round failed; restartPolicy OnFailure keeps the worker running
    lc.report(api.ns, "train", "failed", input=TRAIN_INPUT)
    api.wait_latest("Train/Failed")
    assert gm.controller.wait_idle(5.0)
    clock.step(10.0)  # the failure backoff
    api.wait_latest("Train/Waiting")
    second = {**TRAIN_INPUT, "dataURL": "/data/train/2.txt", "outputDir": "/output/train/2"}
    start_stage(api, lc, "train", second)
    starting = api.conditions()[-1]
    assert starting["reason"] == "WorkerCreated"
    new_name = json.loads(starting["data"])["pod"]
    assert new_name != stale_name
    (fresh,) = [p for p in api.live_pods("train") if p["metadata"]["name"] == new_name]
    env = {e["name"]: e.get("value") for e in fresh["spec"]["containers"][0]["env"]}
    assert env["TRAIN_DATASET_URL"].endswith("/data/train/2.txt")  # this round's data
    # the stale worker's exit does not complete the new round
    api.set_phase(stale_name, "Succeeded")
    assert gm.controller.wait_idle(5.0)
    assert api.latest() == "Train/Starting"
    api.set_phase_and_wait(new_name, "Running", "Train/Running")


def test_missing_dataset_is_named_on_the_waiting_job_and_sent_when_it_appears(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir, dataset=False)
    msg = api.wait_event("MissingDataset")
    assert f"Dataset {api.ns}/incremental-dataset" in msg and "spec.dataset.name" in msg
    waiting = wait_until(
        lambda: (c := api.conditions()[-1]).get("reason") == "MissingDataset" and c,
        what="the waiting condition naming the Dataset",
    )
    assert waiting["type"] == "Waiting" and "incremental-dataset" in waiting["message"]
    assert gm.controller.wait_idle(5.0)
    assert lc.messages(KIND, "insert", JOB) == []  # the LC cannot hear of it yet
    api.create(sample_dataset(sample_dir))  # no resync in 3600 s: the watch sends it
    lc.wait_for(KIND, "insert", JOB)
    lc.wait_for("model", "insert", "initial-model")
    # the note is gone once the Dataset exists; the state is unchanged
    wait_until(lambda: "reason" not in api.conditions()[-1], what="the note cleared")
    assert api.states() == ["Train/Waiting"]


def test_missing_initial_model_is_named_and_sent_when_it_appears(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    api.create(sample_model(sample_dir, "deploy-model"))
    api.create(sample_dataset(sample_dir))
    api.create(sample_job(sample_dir))
    api.wait_latest("Train/Waiting")
    msg = api.wait_event("MissingModel", "initial-model")
    assert f"Model {api.ns}/initial-model" in msg and "spec.initialModel.name" in msg
    wait_until(
        lambda: api.conditions()[-1].get("reason") == "MissingModel",
        what="the waiting condition naming the Model",
    )
    assert gm.controller.wait_idle(5.0)
    assert lc.messages("model", "insert", "initial-model") == []
    api.create(sample_model(sample_dir, "initial-model"))
    lc.wait_for("model", "insert", "initial-model")


def test_invalid_report_event_names_the_field_once(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    lc.report(
        api.ns, "", "", payload={"phase": "train", "status": "ready", "input": {"dataURL": 3}}
    )
    msg = api.wait_event("InvalidReport", "dataURL")
    assert "content.input.dataURL" in msg
    assert "content.content" not in msg
    assert gm.controller.wait_idle(5.0)
    assert api.states() == ["Train/Waiting"]


def test_a_lost_create_answer_makes_no_second_inference_worker(
    api: Api, make_gm: GMFactory, embedded_apiserver: APIServer, sample_dir: Path
) -> None:
    faults = embedded_apiserver.faults
    faults.close_watches_after(1)  # every watch stream ends after one event
    try:
        # virtual time: the blinded pod informer's relist backoff never runs out
        gm = make_gm(clock=whole_second_clock())
        create_dependencies(api, sample_dir)
        ctl = gm.controller
        wait_until(
            lambda: (
                ctl.models.lister.get(api.ns, "deploy-model")
                and ctl.datasets.lister.get(api.ns, "incremental-dataset")
            ),
            what="dependencies cached",
        )
        # Blind the pod informer: it re-watches after its next event, and that fails.
        faults.fail(500, verbs=["watch"], resources=["pods"])
        api.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                # labelled into the scope of the pod informer, controlled by no job
                "metadata": {
                    "name": "unrelated",
                    "labels": {"incrementallearningjob.sedna.io/name": "other"},
                },
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            }
        )
        wait_until(lambda: ctl.pods.lister.get(api.ns, "unrelated"), what="last pod event")
        # The inference pod is created, but the GM hears 504 and its cache never sees it.
        faults.fail(504, verbs=["create"], resources=["pods"], count=1, after_commit=True)
        api.create(sample_job(sample_dir))
        api.wait_event("InferenceWorkerFailed", "504")
        assert len(api.live_pods("inference")) == 1
        api.jobs.patch(api.ns, JOB, {"metadata": {"annotations": {"poke": "1"}}})  # a sync
        api.wait_latest("Train/Waiting")
        (pod,) = api.live_pods("inference")
        assert ctl.pods.lister.get(api.ns, pod["metadata"]["name"]) is None  # still blind
    finally:
        faults.reset()


def test_a_lost_create_answer_makes_no_second_train_worker(
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    embedded_apiserver: APIServer,
    sample_dir: Path,
) -> None:
    faults = embedded_apiserver.faults
    faults.close_watches_after(1)
    try:
        gm = make_gm(clock=whole_second_clock())
        lc = make_lc(gm, DS_NODE)
        start_sample_job(api, sample_dir)
        ctl = gm.controller
        (inference,) = api.live_pods("inference")
        wait_until(lambda: ctl.pods.lister.get(api.ns, inference["metadata"]["name"]))
        faults.fail(500, verbs=["watch"], resources=["pods"])
        api.set_phase(inference["metadata"]["name"], "Running")  # the pod watch's last event
        wait_until(
            lambda: (
                (ctl.pods.lister.get(api.ns, inference["metadata"]["name"]) or {})
                .get("status", {})
                .get("phase")
                == "Running"
            ),
            what="last pod event",
        )
        faults.fail(504, verbs=["create"], resources=["pods"], count=1, after_commit=True)
        lc.report(api.ns, "train", "ready", input=TRAIN_INPUT)
        api.wait_event("WorkerCreateFailed", "504")
        (train,) = api.live_pods("train")
        api.jobs.patch(api.ns, JOB, {"metadata": {"annotations": {"poke": "1"}}})  # a sync
        api.wait_latest("Train/Starting")
        starting = api.conditions()[-1]
        assert json.loads(starting["data"]) == {"pod": train["metadata"]["name"]}
        assert starting["reason"] == "WorkerAdopted"
        assert len(api.live_pods("train")) == 1
    finally:
        faults.reset()


def test_stale_workers_stay_unadopted_when_trimming_dropped_their_conditions(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    clock = whole_second_clock()
    gm = make_gm(clock=clock, options={"maxConditions": 6})
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    stale: list[str] = []
    for round_, backoff in ((1, 10.0), (2, 20.0), (3, 0.0)):
        data = {**TRAIN_INPUT, "dataURL": f"/data/train/{round_}.txt"}
        start_stage(api, lc, "train", data)
        starting = api.conditions()[-1]
        assert starting["reason"] == "WorkerCreated", f"round {round_}"
        pod = json.loads(starting["data"])["pod"]
        assert pod not in stale
        if not backoff:
            break
        api.set_phase_and_wait(pod, "Running", "Train/Running")
        stale.append(pod)  # the LC fails the round; the worker keeps running
        lc.report(api.ns, "train", "failed", input=data)
        api.wait_latest("Train/Failed")
        assert gm.controller.wait_idle(5.0)
        clock.step(backoff)
        api.wait_latest("Train/Waiting")
    recorded = {json.loads(c["data"]).get("pod") for c in api.conditions() if c.get("data")}
    assert stale[0] not in recorded  # trimmed away, and still not adopted
    assert len(api.live_pods("train")) == 3
