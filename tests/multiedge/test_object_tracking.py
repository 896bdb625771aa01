"""ObjectTrackingService (our addition): tracking pods and the ReID Deployment, status,
healing, a restart without duplicates, Sedna's sample and its list env value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .helpers import GM, Api, env_of, fixed_sample, sample, wait_until

KIND = "ObjectTrackingService"
NAME = "pedestrian-tracking"
SAMPLE = "objecttrackingservice_v1alpha1.yaml"


def start(make_gm: Any, api: Api, ref: Path) -> GM:
    gm: GM = make_gm()
    api.create(fixed_sample(ref, SAMPLE))
    return gm


def test_creates_the_reid_deployment_service_and_tracking_pods(
    make_gm: Any, api: Api, sample_dir: Path
) -> None:
    start(make_gm, api, sample_dir)
    reid = api.wait_deployment(f"{NAME}-deployment-reidworker")
    assert reid["spec"]["replicas"] == 5
    labels = reid["metadata"]["labels"]
    assert labels["objecttrackingservice.sedna.io/worker-type"] == "reidworker"
    assert labels["app.sedna.io"] == f"{NAME}-reidworker-svc"
    assert env_of(reid["spec"]["template"]["spec"])["fingerPrintHub"] == "/home/data/"
    svc = api.wait_service(f"{NAME}-reidworker")
    assert svc["spec"]["ports"][0]["port"] == 9378
    pods = api.wait_pods(NAME, 2, "trackingworker")
    for p in pods:
        env = env_of(p["spec"])
        assert env["EDGEMESH_URL"] == f"{NAME}-reidworker.{api.ns}:9378"
        assert env["SERVICE_NAME"] == NAME and env["NAMESPACE"] == api.ns
        assert "USERWORKER_URL" not in env
    assert not [
        d for d in api.deployments.list(api.ns)["items"] if "userworker" in d["metadata"]["name"]
    ]


def test_status_through_a_life(make_gm: Any, api: Api, sample_dir: Path) -> None:
    start(make_gm, api, sample_dir)
    pods = api.wait_pods(NAME, 2, "trackingworker")
    api.wait_condition(KIND, NAME, "Pending")
    api.deployment_available(f"{NAME}-deployment-reidworker")
    api.run_all(NAME)
    status = api.wait_condition(KIND, NAME, "Running")
    assert (status["active"], status["failed"]) == (3, 0)
    assert status["startTime"]
    api.deployment_available(f"{NAME}-deployment-reidworker", ready=False)
    status = api.wait_condition(KIND, NAME, "Failed")
    assert "ReplicaSet has timed out progressing" in status["conditions"][-1]["message"]
    assert status["failed"] == 1
    api.set_phase(pods[0], "Failed")  # after the end: nothing changes
    assert api.status(KIND, NAME)["failed"] == 1


def test_heals_and_rolls_out_and_prunes(make_gm: Any, api: Api, sample_dir: Path) -> None:
    start(make_gm, api, sample_dir)
    pods = api.wait_pods(NAME, 2, "trackingworker")
    api.pods.delete(api.ns, pods[1]["metadata"]["name"])
    wait_until(
        lambda: (
            len(p := api.pods_of(NAME, "trackingworker")) == 2
            and pods[1]["metadata"]["name"] not in {x["metadata"]["name"] for x in p}
        ),
        10.0,
        "the deleted tracking pod made again",
    )
    # an edit of one tracking worker replaces its pod; dropping one deletes its pod
    current = api.owner(KIND, NAME)
    current["spec"]["trackingWorkers"][0]["template"]["spec"]["containers"][0]["image"] = "v2"
    current["spec"]["trackingWorkers"].pop(1)
    api.owners[KIND].replace(api.ns, NAME, current)
    wait_until(
        lambda: (
            [x["spec"]["containers"][0]["image"] for x in api.pods_of(NAME, "trackingworker")]
            == ["v2"]
        ),
        10.0,
        "one tracking pod of the new image",
    )
    api.wait_event_on(NAME, "SuccessfulDelete", "Pod ")


def test_restart_makes_no_duplicates(make_gm: Any, api: Api, sample_dir: Path) -> None:
    gm = start(make_gm, api, sample_dir)
    before = {p["metadata"]["name"] for p in api.wait_pods(NAME, 2, "trackingworker")}
    api.wait_deployment(f"{NAME}-deployment-reidworker")
    gm.stop()
    gm.start()
    api.deployment_available(f"{NAME}-deployment-reidworker")
    api.run_all(NAME)
    api.wait_condition(KIND, NAME, "Running")
    assert {p["metadata"]["name"] for p in api.pods_of(NAME)} == before
    assert len(api.deployments.list(api.ns)["items"]) == 1
    assert len(api.services.list(api.ns)["items"]) == 1


def test_sednas_sample_gets_its_list_env_value_named(
    make_gm: Any, api: Api, sample_dir: Path
) -> None:
    make_gm()
    obj = sample(sample_dir, SAMPLE)
    for w in obj["spec"]["trackingWorkers"]:  # keep only the env fault of the sample
        c = w["template"]["spec"]["containers"][0]
        c["name"] = c["name"].lower()
    api.create(obj)
    status = api.wait_condition(KIND, NAME, "Failed")
    field = "spec.trackingWorkers[0].template.spec.containers[0].env[0].value"
    cond = status["conditions"][-1]
    assert cond["reason"] == "InvalidSpec"
    assert cond["message"] == f"{field}: must be a string, got a list (quote it in YAML)"
    api.wait_event_on(NAME, "InvalidSpec", field)
    assert api.pods_of(NAME) == []
    assert api.deployments.list(api.ns)["items"] == []


def test_sednas_sample_as_is_is_accepted_and_answered(
    make_gm: Any, api: Api, sample_dir: Path
) -> None:
    make_gm()
    api.create(sample(sample_dir, SAMPLE))  # the API server takes it
    status = api.wait_condition(KIND, NAME, "Failed")
    message = status["conditions"][-1]["message"]
    # the first fault met: the capitalised container name, before its list env value
    assert message == (
        "spec.trackingWorkers[0].template.spec.containers[0].name: 'trackingWoker0' is not "
        "a lowercase RFC 1123 label"
    )
    assert api.pods_of(NAME) == []


def test_a_tracking_worker_that_exits_fails_the_service(
    make_gm: Any, api: Api, sample_dir: Path
) -> None:
    """A service worker that ended serves no more, even with exit code 0 (as Sedna
    counts it)."""
    start(make_gm, api, sample_dir)
    pods = api.wait_pods(NAME, 2, "trackingworker")
    api.set_phase(pods[1], "Succeeded")
    status = api.wait_condition(KIND, NAME, "Failed")
    assert f"pod {pods[1]['metadata']['name']}: exited" in status["conditions"][-1]["message"]
    assert status["failed"] == 1
