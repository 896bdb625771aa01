"""ObjectSearchService: Sedna's objects, names and env; status through a life; healing;
a restart without duplicates; Sedna's sample; malformed specs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.logs import LogCapture

from sedna.runtime import SPEC_HASH_ANNOTATION

from .helpers import GM, Api, container, env_of, fixed_sample, sample, wait_until

KIND = "ObjectSearchService"
NAME = "pedestrian-search"
SAMPLE = "objectsearchservice_v1alpha1.yaml"


def start(make_gm: Any, api: Api, ref: Path) -> GM:
    gm: GM = make_gm()
    api.create(fixed_sample(ref, SAMPLE))
    return gm


def test_creates_sednas_deployments_services_and_tracking_pods(
    make_gm: Any, api: Api, sample_dir: Path
) -> None:
    start(make_gm, api, sample_dir)
    ns = api.ns
    reid = api.wait_deployment(f"{NAME}-deployment-reidworker")
    user = api.wait_deployment(f"{NAME}-deployment-userworker")
    assert reid["spec"]["replicas"] == 5
    assert user["spec"]["replicas"] == 1
    labels = reid["spec"]["template"]["metadata"]["labels"]
    assert labels["objectsearchservice.sedna.io/name"] == NAME
    assert labels["objectsearchservice.sedna.io/worker-type"] == "reidworker"
    assert labels["app.sedna.io"] == f"{NAME}-reidworker-svc"
    user_env = env_of(user["spec"]["template"]["spec"])
    assert user_env["NAMESPACE"] == ns
    assert user_env["SERVICE_NAME"] == NAME
    assert user_env["WORKER_NAME"].startswith("userworker-") and len(user_env["WORKER_NAME"]) == 16

    reid_svc = api.wait_service(f"{NAME}-reidworker")
    user_svc = api.wait_service(f"{NAME}-userworker")
    assert [(p["name"], p["port"], p["targetPort"]) for p in reid_svc["spec"]["ports"]] == [
        ("tcp-0", 9378, 9378)
    ]
    assert user_svc["spec"]["ports"][0]["port"] == 9379
    assert user_svc["spec"]["selector"]["objectsearchservice.sedna.io/worker-type"] == "userworker"

    pods = api.wait_pods(NAME, 2, "trackingworker")
    envs = [env_of(p["spec"]) for p in pods]
    for p, env in zip(pods, envs, strict=True):
        assert p["metadata"]["name"].startswith(f"{NAME}-trackingworker-")
        owner = p["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["controller"]) == (KIND, NAME, True)
        assert env["USERWORKER_URL"] == f"{NAME}-userworker.{ns}:9379"
        assert env["EDGEMESH_URL"] == f"{NAME}-reidworker.{ns}:9378"
        assert env["SERVICE_NAME"] == NAME and env["NAMESPACE"] == ns
        assert env["WORKER_NAME"].startswith("trackingworker-")
        assert env["dataSources"] in ("192.168.0.12,192.168.0.13", "192.168.0.10,192.168.0.11")
    assert envs[0]["WORKER_NAME"] != envs[1]["WORKER_NAME"]
    node_selectors = sorted(p["spec"]["nodeSelector"]["edgeai/app"] for p in pods)
    assert node_selectors == ["worker0", "worker1"]


def test_status_pending_then_running_then_failed_for_good(
    make_gm: Any, api: Api, sample_dir: Path
) -> None:
    start(make_gm, api, sample_dir)
    pods = api.wait_pods(NAME, 2, "trackingworker")
    status = api.wait_condition(KIND, NAME, "Pending")
    assert status["startTime"]
    for d in ("reidworker", "userworker"):
        api.deployment_available(f"{NAME}-deployment-{d}")
    api.run_all(NAME)
    status = api.wait_condition(KIND, NAME, "Running")
    assert (status["active"], status["failed"]) == (4, 0)

    api.set_phase(pods[0], "Failed")
    status = api.wait_condition(KIND, NAME, "Failed")
    assert status["conditions"][-1]["reason"] == "podFailed"  # Sedna's reason for a pod
    assert pods[0]["metadata"]["name"] in status["conditions"][-1]["message"]
    assert (status["active"], status["failed"]) == (3, 1)
    api.wait_event_on(NAME, "podFailed")
    # terminal: a new pod for the failed worker is never made, the status stays
    api.set_phase(pods[1], "Failed")
    api.pods.delete(api.ns, pods[0]["metadata"]["name"])
    wait_until(lambda: len(api.pods_of(NAME, "trackingworker")) == 1, 5.0, "pod deleted")
    assert api.condition(KIND, NAME) == "Failed"
    assert api.status(KIND, NAME)["failed"] == 1


def test_a_failed_deployment_fails_the_service_with_sednas_reason(
    make_gm: Any, api: Api, sample_dir: Path
) -> None:
    """Sedna tells a failed Deployment (``deploymentFailed``) from a failed tracking pod
    (``podFailed``) in the Failed condition's reason and its Warning Event."""
    start(make_gm, api, sample_dir)
    api.wait_pods(NAME, 2, "trackingworker")
    api.wait_deployment(f"{NAME}-deployment-userworker")
    api.deployment_available(f"{NAME}-deployment-userworker", ready=False)
    status = api.wait_condition(KIND, NAME, "Failed")
    assert status["conditions"][-1]["reason"] == "deploymentFailed"
    assert f"{NAME}-deployment-userworker" in status["conditions"][-1]["message"]
    api.wait_event_on(NAME, "deploymentFailed")


def test_deleted_workers_are_made_again(make_gm: Any, api: Api, sample_dir: Path) -> None:
    start(make_gm, api, sample_dir)
    pods = api.wait_pods(NAME, 2, "trackingworker")
    api.wait_deployment(f"{NAME}-deployment-userworker")
    api.wait_service(f"{NAME}-reidworker")
    gone = pods[0]["metadata"]["name"]
    api.pods.delete(api.ns, gone)
    api.deployments.delete(api.ns, f"{NAME}-deployment-userworker")
    api.services.delete(api.ns, f"{NAME}-reidworker")
    wait_until(
        lambda: (
            len(p := api.pods_of(NAME, "trackingworker")) == 2
            and gone not in {x["metadata"]["name"] for x in p}
        ),
        10.0,
        "a new tracking pod",
    )
    api.wait_deployment(f"{NAME}-deployment-userworker")
    api.wait_service(f"{NAME}-reidworker")
    new = [p for p in api.pods_of(NAME, "trackingworker") if p["metadata"]["name"] != gone]
    # the healed worker is the same worker: same env, same WORKER_NAME
    assert sorted(env_of(p["spec"])["WORKER_NAME"] for p in new) == sorted(
        env_of(p["spec"])["WORKER_NAME"] for p in pods
    )
    assert api.condition(KIND, NAME) != "Failed"


def test_restart_makes_no_duplicates(make_gm: Any, api: Api, sample_dir: Path) -> None:
    gm = start(make_gm, api, sample_dir)
    pods = api.wait_pods(NAME, 2, "trackingworker")
    api.wait_deployment(f"{NAME}-deployment-reidworker")
    before = {p["metadata"]["name"] for p in pods}
    gm.restart()
    api.deployment_available(f"{NAME}-deployment-reidworker")
    api.deployment_available(f"{NAME}-deployment-userworker")
    api.run_all(NAME)
    api.wait_condition(KIND, NAME, "Running")
    assert {p["metadata"]["name"] for p in api.pods_of(NAME, "trackingworker")} == before
    assert len(api.deployments.list(api.ns)["items"]) == 2
    assert len(api.services.list(api.ns)["items"]) == 2


def test_sednas_sample_is_accepted_and_its_list_env_value_named(
    make_gm: Any, api: Api, sample_dir: Path
) -> None:
    make_gm()
    api.create(sample(sample_dir, SAMPLE))
    status = api.wait_condition(KIND, NAME, "Failed")
    cond = status["conditions"][-1]
    assert cond["reason"] == "InvalidSpec"
    assert cond["message"].startswith("spec.userWorker.template.spec.containers[0].name")
    msg = api.wait_event_on(NAME, "InvalidSpec")
    assert "spec.userWorker.template.spec.containers[0].name" in msg
    assert api.pods_of(NAME) == []
    # the user's fix is synced: not terminal
    fixed = fixed_sample(sample_dir, SAMPLE)
    current = api.owner(KIND, NAME)
    current["spec"] = fixed["spec"]
    api.owners[KIND].replace(api.ns, NAME, current)
    api.wait_pods(NAME, 2, "trackingworker")


def test_list_env_value_is_named(make_gm: Any, api: Api, sample_dir: Path) -> None:
    make_gm()
    obj = fixed_sample(sample_dir, SAMPLE)
    obj["spec"]["trackingWorkers"][1]["template"]["spec"]["containers"][0]["env"][0]["value"] = [
        "192.168.0.10"
    ]
    api.create(obj)
    status = api.wait_condition(KIND, NAME, "Failed")
    field = "spec.trackingWorkers[1].template.spec.containers[0].env[0].value"
    assert status["conditions"][-1]["message"].startswith(field)
    assert "must be a string, got a list" in status["conditions"][-1]["message"]
    api.wait_event_on(NAME, "InvalidSpec", field)


def test_malformed_specs_name_the_field(make_gm: Any, api: Api, sample_dir: Path) -> None:
    make_gm()
    cases: list[tuple[str, Any, str]] = [
        ("no-reid", lambda s: s.pop("reidWorkers"), "spec.reidWorkers"),
        (
            "bad-replicas",
            lambda s: s["reidWorkers"].update(replicas="5"),
            "spec.reidWorkers.replicas",
        ),
        ("bad-tracking", lambda s: s.update(trackingWorkers={"a": 1}), "spec.trackingWorkers"),
        (
            "no-containers",
            lambda s: s["userWorker"]["template"]["spec"].update(containers=[]),
            "spec.userWorker.template.spec.containers",
        ),
        (  # refused by the API server, not by our checks: its field, under the template
            "bad-ports",
            lambda s: s["reidWorkers"]["template"]["spec"]["containers"][0].update(ports="x"),
            "spec.reidWorkers.template.spec.containers[0].ports",
        ),
    ]
    for name, edit, _field in cases:
        obj = fixed_sample(sample_dir, SAMPLE)
        obj["metadata"]["name"] = name
        edit(obj["spec"])
        api.create(obj)
    for name, _edit, field in cases:
        status = api.wait_condition(KIND, name, "Failed")
        assert status["conditions"][-1]["reason"] == "InvalidSpec"
        assert status["conditions"][-1]["message"].startswith(field + ":"), status
        api.wait_event_on(name, "InvalidSpec", field)
        assert api.pods_of(name) == []


def test_lc_reports_for_the_kind_are_rejected_and_named(
    make_gm: Any, make_lc: Any, api: Api, sample_dir: Path, logs: LogCapture
) -> None:
    """Sedna's handler for this kind is a stub; ours registers none, so the message layer
    rejects the report with a log line naming node, kind and name."""
    gm = start(make_gm, api, sample_dir)
    api.wait_pods(NAME, 2, "trackingworker")
    lc = make_lc(gm, "edge0")
    lc.report(api.ns, "objectsearchservice", NAME, {"phase": "inference"})
    logs.wait("edge0", "objectsearchservice", NAME, "no handler for kind")
    assert "metrics" not in api.status(KIND, NAME)


def _controlled_by(owner: dict[str, Any], controller: bool = True) -> list[dict[str, Any]]:
    meta = owner["metadata"]
    return [{"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"],
             "uid": meta["uid"], "controller": controller}]  # fmt: skip


def _sedna_label(owners: list[dict[str, Any]]) -> dict[str, str]:
    """The owner kind's label, as on every object the GM makes (its caches select on it)."""
    return {f"{owners[0]['kind'].lower()}.sedna.io/name": owners[0]["name"]}


def _deployment(name: str, owners: list[dict[str, Any]]) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "ownerReferences": owners, "labels": _sedna_label(owners)},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container()]}},
        },
    }


def _service(name: str, owners: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "ownerReferences": owners, "labels": _sedna_label(owners)},
        "spec": {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": 80}]},
    }


def test_a_deployment_and_a_service_the_plan_does_not_name_are_pruned(
    make_gm: Any, api: Api, sample_dir: Path
) -> None:
    """What the service controls but no longer plans (e.g. left by an older spec) goes;
    what it merely references without controlling stays."""
    start(make_gm, api, sample_dir)
    planned_deps = sorted(f"{NAME}-deployment-{w}" for w in ("reidworker", "userworker"))
    planned_svcs = sorted(f"{NAME}-{w}" for w in ("reidworker", "userworker"))
    for name in planned_deps:
        api.wait_deployment(name)
    for name in planned_svcs:
        api.wait_service(name)
    owner = api.owner(KIND, NAME)
    api.deployments.create(api.ns, _deployment(f"{NAME}-deployment-stale", _controlled_by(owner)))
    api.services.create(api.ns, _service(f"{NAME}-stale", _controlled_by(owner)))
    api.deployments.create(api.ns, _deployment("bystander", _controlled_by(owner, False)))
    api.services.create(api.ns, _service("bystander", _controlled_by(owner, False)))

    def names(client: Any) -> list[str]:
        return sorted(o["metadata"]["name"] for o in client.list(api.ns)["items"])

    wait_until(lambda: names(api.deployments) == sorted([*planned_deps, "bystander"]), 10.0,
               "stale Deployment pruned")  # fmt: skip
    wait_until(lambda: names(api.services) == sorted([*planned_svcs, "bystander"]), 10.0,
               "stale Service pruned")  # fmt: skip


def test_a_service_built_from_another_spec_is_rolled_back_to_the_plan(
    make_gm: Any, api: Api, sample_dir: Path
) -> None:
    """A Service whose spec-hash annotation is not the plan's (an older GM's, or edited)
    is updated in place to the planned spec; the server's fields (clusterIP) are kept."""
    start(make_gm, api, sample_dir)
    name = f"{NAME}-reidworker"
    svc = api.wait_service(name)
    planned_hash = svc["metadata"]["annotations"][SPEC_HASH_ANNOTATION]
    svc["metadata"]["annotations"][SPEC_HASH_ANNOTATION] = "0000000000000000"
    svc["spec"]["ports"] = [{"name": "tcp-0", "port": 1234, "targetPort": 1234}]
    cluster_ip = svc["spec"].get("clusterIP")
    api.services.replace(api.ns, name, svc)

    def restored() -> dict[str, Any] | None:
        s = api.services.get(api.ns, name)
        ok = s["metadata"]["annotations"][SPEC_HASH_ANNOTATION] == planned_hash
        return s if ok else None

    svc = wait_until(restored, 10.0, "service rolled back to the plan")
    assert [(p["port"], p["targetPort"]) for p in svc["spec"]["ports"]] == [(9378, 9378)]
    assert svc["spec"].get("clusterIP") == cluster_ip
