"""A FederatedLearningJob's life through the real Manager, the real websocket and test LCs.

The workers and their env as Sedna's Go GM makes them, the Service on 7363, the job on
every training node's LC, phases and conditions from the pods, self-healing, a spec
change rolled out, and the LCs' round reports (Sedna's federatedlearningjob_test.go
cases `Test_deletePod` and `Test_updateJob` are in here as real-API scenarios).
"""

from __future__ import annotations

import copy
from pathlib import Path

from .conftest import GMFactory, LCFactory
from .helpers import (
    JOB,
    LABEL,
    MODEL,
    NODES,
    WORKER,
    Api,
    LogCapture,
    env_of,
    sample_job,
    started_job,
    wait_until,
)


def test_sample_gets_its_aggregator_service_and_one_training_pod_per_worker(
    api: Api, make_gm: GMFactory, sample_dir: Path
) -> None:
    _, job = started_job(api, make_gm, sample_dir)
    workers = api.workers()
    assert sorted(workers) == ["aggregation", "training-0", "training-1"]

    agg = workers["aggregation"]
    meta = agg["metadata"]
    assert meta["generateName"] == f"{JOB}-aggregation-"
    assert meta["labels"][f"{LABEL}worker-type"] == "aggregation"
    assert meta["labels"][f"{LABEL}name"] == JOB
    (owner,) = meta["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == (
        "FederatedLearningJob",
        JOB,
        True,
    )
    assert agg["spec"]["nodeName"] == "cloud"
    assert agg["spec"]["restartPolicy"] == "OnFailure"
    env = env_of(agg)
    assert env["exit_round"] == "3"  # the template's own env comes first and stays
    assert env["NAMESPACE"] == api.ns and env["JOB_NAME"] == JOB
    assert env["WORKER_NAME"].startswith("aggworker-") and len(env["WORKER_NAME"]) == 15
    assert (env["AGG_BIND_PORT"], env["PARTICIPANTS_COUNT"], env["TRANSMITTER"]) == (
        "7363",
        "2",
        "ws",
    )
    assert env["MODEL_URL"] == "/home/data/model"  # a host path, mounted (Sedna's rule)

    for i, node in enumerate(NODES):
        pod = workers[f"training-{i}"]
        assert pod["metadata"]["generateName"] == f"{JOB}-train-"
        assert pod["metadata"]["labels"][f"{LABEL}worker-type"] == "train"
        assert pod["spec"]["nodeName"] == node
        assert pod["spec"]["hostNetwork"] is True
        assert pod["spec"]["restartPolicy"] == "OnFailure"
        env = env_of(pod)
        assert env["batch_size"] == "32"
        assert env["AGG_PORT"] == "7363"
        assert env["AGG_IP"] == f"{JOB}-aggregation.{api.ns}"
        assert env["WORKER_NAME"].startswith("trainworker-")
        assert env["PARTICIPANTS_COUNT"] == "2"
        assert env["MODEL_NAME"] == MODEL
        assert env["DATASET_NAME"] == job["spec"]["trainingWorkers"][i]["dataset"]["name"]
        assert env["LC_SERVER"] == "http://localhost:9100"
        assert env["TRANSMITTER"] == "ws"
        assert env["TRAIN_DATASET_URL"].endswith(".txt")

    svc = api.services.get(api.ns, f"{JOB}-aggregation")
    assert svc["spec"]["ports"] == [
        {"name": "tcp-0", "protocol": "TCP", "port": 7363, "targetPort": 7363}
    ]
    assert svc["spec"]["selector"][f"{LABEL}worker-type"] == "aggregation"
    assert svc["metadata"]["ownerReferences"][0]["uid"] == api.job()["metadata"]["uid"]

    api.wait_phase("Pending")
    status = api.status()
    assert status["startTime"] and (status["active"], status["succeeded"]) == (3, 0)

    # One Event for the sync's four creates (each used to be a request of its own).
    api.wait_event("SuccessfulCreate", workers["training-1"]["metadata"]["name"])
    creates = [m for _, reason, m in api.event_list() if reason == "SuccessfulCreate"]
    assert creates == [
        f"Created Service {JOB}-aggregation (port 7363); "
        f"Created aggregation worker pod {meta['name']}; "
        f"Created training-0 worker pod {workers['training-0']['metadata']['name']}; "
        f"Created training-1 worker pod {workers['training-1']['metadata']['name']}"
    ]


def test_a_new_job_s_first_phase_is_no_event_its_next_one_is(
    api: Api, make_gm: GMFactory, sample_dir: Path
) -> None:
    """Pending right after the workers are made is what the SuccessfulCreate Event says:
    no Event of its own (a write per job). A later phase change is an Event."""
    started_job(api, make_gm, sample_dir)
    api.wait_phase("Pending")
    api.set_all("Running")
    api.wait_phase("Running")
    api.wait_event("Running", "phase Pending -> Running")
    reasons = [r for _, r, _ in api.event_list()]
    assert reasons.count("SuccessfulCreate") == 1
    assert "Pending" not in reasons


def test_the_job_reaches_every_training_node_and_leaves_it_on_delete(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    job = sample_job(sample_dir)
    api.inputs(job)
    gm = make_gm()
    lcs = [make_lc(gm, n) for n in NODES]
    cloud = make_lc(gm, "cloud")
    api.create(job)
    for lc in lcs:
        m = lc.wait_for("insert")
        assert (m.kind, m.namespace, m.payload["kind"]) == (
            "federatedlearningjob",
            api.ns,
            "FederatedLearningJob",
        )
        assert m.payload["spec"]["trainingWorkers"] == job["spec"]["trainingWorkers"]
    api.wait_phase("Pending")
    api.set_all("Running")
    api.wait_phase("Running")
    # status-only changes are not sent again; a spec change is
    sent = len(lcs[0].messages("insert"))
    api.fl.patch(api.ns, JOB, {"metadata": {"labels": {"team": "a"}}})
    lcs[0].wait_for("insert", pred=lambda m: m.payload["metadata"].get("labels") == {"team": "a"})
    assert len(lcs[0].messages("insert")) == sent + 1
    # a training worker moved away: its old node is told to forget the job
    api.fl.patch(
        api.ns,
        JOB,
        [
            {
                "op": "replace",
                "path": "/spec/trainingWorkers/1/template/spec/nodeName",
                "value": "edge1",
            }
        ],
        patch_type="json",
    )
    lcs[1].wait_for("delete")
    api.fl.delete(api.ns, JOB)
    lcs[0].wait_for("delete")
    assert cloud.messages() == []  # the aggregator's node has no LC part in FL


def test_phases_follow_the_pods_to_success(api: Api, make_gm: GMFactory, sample_dir: Path) -> None:
    started_job(api, make_gm, sample_dir)
    api.wait_phase("Pending")
    workers = api.workers()
    api.set_phase(workers["aggregation"]["metadata"]["name"], "Running")
    api.set_phase(workers["training-0"]["metadata"]["name"], "Running")
    api.set_phase(workers["training-1"]["metadata"]["name"], "Running")
    api.wait_phase("Running")
    api.wait_event("Running", "Pending -> Running")
    for slot in ("training-0", "training-1"):
        api.set_phase(workers[slot]["metadata"]["name"], "Succeeded")
    wait_until(lambda: api.status().get("succeeded") == 2)
    assert api.phase() == "Running"
    api.set_phase(workers["aggregation"]["metadata"]["name"], "Succeeded")
    api.wait_phase("Succeeded")
    status = api.status()
    assert status["completionTime"]
    assert (status["active"], status["succeeded"], status["failed"]) == (0, 3, 0)
    assert [c["type"] for c in status["conditions"]] == ["Complete"]
    assert status["conditions"][0]["status"] == "True"
    api.wait_event("Completed", "FederatedLearningJob completed")
    # finished: a deleted pod is not brought back
    api.pods.delete(api.ns, workers["training-0"]["metadata"]["name"])
    wait_until(lambda: len(api.live_pods()) == 2)
    api.fl.patch(api.ns, JOB, {"metadata": {"labels": {"poke": "1"}}})
    wait_until(lambda: api.job()["metadata"]["labels"] == {"poke": "1"})
    assert len(api.live_pods()) == 2 and api.phase() == "Succeeded"


def test_a_failed_worker_fails_the_job_for_good(
    api: Api, make_gm: GMFactory, sample_dir: Path
) -> None:
    started_job(api, make_gm, sample_dir)
    api.set_all("Running")
    api.wait_phase("Running")
    pod = api.workers()["training-1"]["metadata"]["name"]
    api.set_phase(pod, "Failed")
    api.wait_phase("Failed")
    (cond,) = [c for c in api.conditions() if c["type"] == "Failed"]
    assert cond["status"] == "True" and cond["reason"] == "workerFailed"
    assert pod in cond["message"]
    api.wait_event("workerFailed", pod)
    assert ("Warning", "workerFailed") in {(t, r) for t, r, _ in api.event_list()}
    assert api.status()["failed"] == 1
    assert len(api.live_pods()) == 3  # the failed pod is kept, nothing is recreated


def test_every_deleted_worker_and_the_service_are_healed(
    api: Api, make_gm: GMFactory, sample_dir: Path, logs: LogCapture
) -> None:
    started_job(api, make_gm, sample_dir)
    for slot in ("aggregation", "training-0", "training-1"):
        old = api.workers()[slot]["metadata"]["name"]
        api.pods.delete(api.ns, old)
        wait_until(
            lambda slot=slot, old=old: (
                slot in (w := api.workers()) and w[slot]["metadata"]["name"] != old
            ),
            what=f"{slot} recreated",
        )
        assert len(api.live_pods()) == 3
    # the healed training pod is built from the spec, as the first one was
    env = env_of(api.workers()["training-1"])
    assert env["DATASET_NAME"] == "edge2-surface-defect-detection-dataset"
    api.services.delete(api.ns, f"{JOB}-aggregation")
    wait_until(
        lambda: any(
            s["metadata"]["name"] == f"{JOB}-aggregation"
            for s in api.services.list(api.ns)["items"]
        )
    )
    assert len(api.live_pods()) == 3


def test_a_service_whose_spec_drifted_is_healed_in_place(
    api: Api, make_gm: GMFactory, sample_dir: Path
) -> None:
    """A Service of ours without the spec it was built from (made by an older GM, or
    edited along with its hash) gets the aggregator's port and selector back, and keeps
    its name and cluster IP."""
    started_job(api, make_gm, sample_dir)
    name = f"{JOB}-aggregation"
    before = api.services.get(api.ns, name)
    drifted = copy.deepcopy(before)
    drifted["metadata"]["annotations"] = {}
    drifted["spec"]["ports"] = [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 80}]
    drifted["spec"]["selector"] = {"app": "something-else"}
    api.services.replace(api.ns, name, drifted)
    api.fl.patch(api.ns, JOB, {"metadata": {"labels": {"poke": "1"}}})  # a sync
    healed = wait_until(
        lambda: (s := api.services.get(api.ns, name))["spec"]["ports"][0]["port"] == 7363 and s,
        what="the Service healed",
    )
    assert healed["spec"]["ports"] == before["spec"]["ports"]
    assert healed["spec"]["selector"] == before["spec"]["selector"]
    assert healed["metadata"]["uid"] == before["metadata"]["uid"]
    assert healed["spec"].get("clusterIP") == before["spec"].get("clusterIP")
    api.wait_event("SuccessfulUpdate", name)
    assert len(api.live_pods()) == 3


def test_a_spec_change_rebuilds_the_workers(api: Api, make_gm: GMFactory, sample_dir: Path) -> None:
    """Sedna's Test_updateJob: an edited training env reaches new pods, old ones go."""
    started_job(api, make_gm, sample_dir)
    before = {p["metadata"]["name"] for p in api.live_pods()}
    job = api.job()
    spec = copy.deepcopy(job["spec"])
    spec["trainingWorkers"][0]["template"]["spec"]["containers"][0]["env"][0]["value"] = "16"
    api.fl.patch(api.ns, JOB, {"spec": {"trainingWorkers": spec["trainingWorkers"]}})
    assert api.job()["metadata"]["generation"] == 2

    def rebuilt() -> bool:
        live = api.live_pods()
        return len(live) == 3 and not before & {p["metadata"]["name"] for p in live}

    wait_until(rebuilt, what="three new pods")
    workers = api.workers()
    assert {
        p["metadata"]["annotations"]["sedna-gm.io/fl-generation"] for p in workers.values()
    } == {"2"}
    assert env_of(workers["training-0"])["batch_size"] == "16"
    assert env_of(workers["training-1"])["batch_size"] == "32"
    api.wait_event("SuccessfulDelete", "generation 1, the job is at 2")


def test_round_reports_become_bounded_conditions_and_metrics_reach_the_model(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path, logs: LogCapture
) -> None:
    job = sample_job(sample_dir)
    api.inputs(job)
    gm = make_gm(options={"maxConditions": 3})
    edge1, edge2 = (make_lc(gm, n) for n in NODES)
    api.create(job)
    edge1.wait_for("insert")
    api.wait_workers(3)

    def rounds() -> list[str]:
        return [c["message"] for c in api.conditions() if c["type"] == "Training"]

    edge1.report_round(api.ns, 1)
    wait_until(lambda: rounds() == ["Round 1 reaches at 2026-12-01T10:00:01Z"])
    logs.wait(f"federated learning job {api.ns}/{JOB}: round 1 reached", "node edge1")
    edge2.report_round(api.ns, 1)  # every node reports each round: recorded once
    edge2.report_round(api.ns, 2, {"accuracy": 0.91, "loss": [0.2, 0.1]})
    wait_until(lambda: len(rounds()) == 2)
    model = api.models.get(api.ns, MODEL)
    assert model["status"]["metrics"] == [
        {"key": "accuracy", "value": "0.91"},
        {"key": "loss", "value": "[0.2,0.1]"},
    ]
    assert model["status"]["updateTime"]
    for r in (3, 4, 5):
        edge1.report_round(api.ns, r)
    wait_until(lambda: rounds()[-1].startswith("Round 5 "))
    assert len(api.conditions()) == 3  # maxConditions
    assert all(c["reason"] == "DoTraining" and c["status"] == "True" for c in api.conditions())


def test_two_jobs_each_get_their_own_aggregator_address(
    api: Api, make_gm: GMFactory, sample_dir: Path
) -> None:
    """Sedna issue 466: the aggregator's address was one controller-wide field."""
    make_gm(workers=2)
    for name in ("job-a", "job-b"):
        job = sample_job(sample_dir)
        job["metadata"]["name"] = name
        if name == "job-a":
            api.inputs(job)
        api.create(job)
    for name in ("job-a", "job-b"):
        wait_until(lambda name=name: len(api.live_pods(name)) == 3)
        for pod in api.live_pods(name):
            if pod["metadata"]["annotations"][WORKER].startswith("training"):
                assert env_of(pod)["AGG_IP"] == f"{name}-aggregation.{api.ns}"
        api.services.get(api.ns, f"{name}-aggregation")


def test_a_whole_life_through_the_websocket_with_go_protocol_lcs(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path, logs: LogCapture
) -> None:
    """Insert to both training nodes, workers run, both LCs report every round, the
    aggregated metrics land on the Model, the workers finish, the job is deleted."""
    job = sample_job(sample_dir)
    api.inputs(job)
    gm = make_gm()
    lcs = [make_lc(gm, n) for n in NODES]
    api.create(job)
    for lc in lcs:
        lc.wait_for("insert")
    api.wait_workers(3)
    api.set_all("Running")
    api.wait_phase("Running")
    for r in (1, 2, 3):
        for lc in lcs:
            lc.report_round(api.ns, r, {"accuracy": 0.5 + r / 10} if r == 3 else None)
        wait_until(lambda r=r: _rounds(api) == list(range(1, r + 1)), what=f"round {r}")
    wait_until(lambda: (api.models.get(api.ns, MODEL).get("status") or {}).get("metrics"))
    api.set_all("Succeeded")
    api.wait_phase("Succeeded")
    assert [c["type"] for c in api.conditions()] == ["Training"] * 3 + ["Complete"]
    api.fl.delete(api.ns, JOB)
    for lc in lcs:
        lc.wait_for("delete")
    assert len(lcs[0].messages("insert")) >= 1


def _rounds(api: Api) -> list[int]:
    return [int(c["message"].split(" ")[1]) for c in api.conditions() if c["type"] == "Training"]


def test_a_deleted_pod_no_job_controls_is_left_alone(
    api: Api, make_gm: GMFactory, sample_dir: Path, logs: LogCapture
) -> None:
    """Sedna's Test_deletePod, second case: deleting what is not an FL worker is harmless."""
    started_job(api, make_gm, sample_dir)
    stray = api.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "test-pod"},
            "spec": {"containers": [{"name": "test-container", "image": "test-image"}]},
        }
    )
    api.pods.delete(api.ns, stray["metadata"]["name"])
    wait_until(
        lambda: "test-pod" not in {p["metadata"]["name"] for p in api.pods.list(api.ns)["items"]}
    )
    # the job's workers are untouched and the controller still answers
    old = api.workers()["training-0"]["metadata"]["name"]
    api.pods.delete(api.ns, old)
    wait_until(
        lambda: (
            "training-0" in api.workers() and api.workers()["training-0"]["metadata"]["name"] != old
        )
    )
    assert len(api.live_pods()) == 3
