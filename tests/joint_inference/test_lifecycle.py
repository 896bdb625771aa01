"""A joint inference service's life: through the real websocket with a Go-protocol LC,
the embedded Deployment controller, and the test as the kubelet."""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.deployments import DeploymentControllerFactory
from support.logs import LogCapture

from sedna.runtime import SPEC_HASH_ANNOTATION

from .conftest import GMFactory, LCFactory
from .helpers import (
    BIG,
    CLOUD_DEPLOYMENT,
    CLOUD_SERVICE,
    EDGE_DEPLOYMENT,
    GM,
    NODE,
    SAMPLE,
    Api,
    TestLC,
    env_of,
    sample_service,
    wait_until,
    worker_report,
)

LABEL = "jointinferenceservice.sedna.io"


@dataclass(frozen=True)
class Started:
    gm: GM
    lc: TestLC
    sample: dict[str, Any]
    """Sedna's sample service, not yet created."""


@pytest.fixture()
def started(
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    deployment_controller: DeploymentControllerFactory,
    sample_dir: Path,
) -> Started:
    """The embedded Deployment controller, the service's Models, a GM and an LC on NODE.

    The Models come first: in the GM's first list, not racing the service's first sync
    (a Model created just before the service may reach the GM's cache after it, and the
    service then goes Pending with ModelNotFound once before it runs).
    """
    deployment_controller()
    api.create_models()
    gm = make_gm()
    return Started(gm, make_lc(gm, NODE), sample_service(sample_dir))


def test_full_life_through_the_websocket(api: Api, started: Started) -> None:
    lc = started.lc
    created = api.create(started.sample)
    msg = lc.wait_for("insert")
    assert msg.payload["kind"] == "JointInferenceService"
    assert msg.payload["metadata"]["uid"] == created["metadata"]["uid"]
    json.loads(base64.b64decode(msg.content))  # plain base64 JSON, as the Go LC decodes it

    api.wait_deployment(CLOUD_DEPLOYMENT)
    api.wait_deployment(EDGE_DEPLOYMENT)
    svc = api.services.get(api.ns, CLOUD_SERVICE)
    assert svc["spec"]["ports"] == [
        {"name": "tcp-0", "protocol": "TCP", "port": 5000, "targetPort": 5000}
    ]
    # Pending, never Failed, while the Deployments are not yet available (Sedna issue 234)
    api.wait_condition("Pending")
    assert api.status()["failed"] == 0
    api.until_running()
    status = api.status()
    assert (status["active"], status["failed"]) == (2, 0)
    assert api.condition_types() == ["Pending", "Running"]
    assert status["startTime"]
    api.wait_event("WorkersAvailable")
    # the first Pending, waiting for the workers just made, is the SuccessfulCreate
    # Event's news: no Event of its own
    reasons = [r for _, r, _ in api.event_list()]
    assert "WorkersNotAvailable" not in reasons and "SuccessfulCreate" in reasons

    lc.report(api.ns, worker_report(42, 7))
    wait_until(lambda: api.status().get("metrics"), 5.0, "metrics")
    assert api.status()["metrics"] == [
        {"key": "inferenceNumber", "value": "42"},
        {"key": "hardExampleNumber", "value": "7"},
        {"key": "uploadCloudRatio", "value": "0.16666666666666666"},
    ]
    # our status writes are not echoed to the LC
    inserts = len(lc.messages("insert"))
    api.run_pods()
    assert len(lc.messages("insert")) == inserts

    api.jis.delete(api.ns, SAMPLE)
    lc.wait_for("delete")
    wait_until(lambda: not api.names("deployments"), 10.0, "deployments collected")
    wait_until(lambda: not api.names("services"), 10.0, "service collected")


def test_workers_have_sedna_env_labels_and_owner(api: Api, started: Started) -> None:
    created = api.create(started.sample)
    uid = created["metadata"]["uid"]
    cloud = api.wait_deployment(CLOUD_DEPLOYMENT)
    edge = api.wait_deployment(EDGE_DEPLOYMENT)
    ns = api.ns
    cenv, eenv = env_of(cloud), env_of(edge)
    assert cenv["BIG_MODEL_BIND_PORT"] == "5000"
    assert "BIG_MODEL_IP" not in cenv
    assert eenv["BIG_MODEL_IP"] == f"{CLOUD_SERVICE}.{ns}"
    assert eenv["BIG_MODEL_PORT"] == "5000"
    assert eenv["HEM_NAME"] == "IBT"
    assert eenv["HEM_PARAMETERS"] == (
        '[{"key":"threshold_img","value":"0.5"},{"key":"threshold_box","value":"0.5"}]'
    )
    assert eenv["LC_SERVER"] == "http://localhost:9100"
    for env, wtype in ((cenv, "cloud"), (eenv, "edge")):
        assert env["NAMESPACE"] == ns
        assert env["SERVICE_NAME"] == SAMPLE
        # Sedna's utilrand alphabet, as `stable_worker_name` draws from it
        assert re.fullmatch(rf"{wtype}worker-[b-df-hj-np-tv-xz2456-9]{{5}}", env["WORKER_NAME"])
        assert env["MODEL_URL"].startswith("/")  # the storage initializer's local path
        assert env["input_shape"]  # the user's env is kept, first
    for dep, wtype in ((cloud, "Cloud"), (edge, "Edge")):
        meta = dep["metadata"]
        assert meta["ownerReferences"] == [{
            "apiVersion": "sedna.io/v1alpha1", "kind": "JointInferenceService", "name": SAMPLE,
            "uid": uid, "controller": True, "blockOwnerDeletion": True,
        }]  # fmt: skip
        labels = dep["spec"]["template"]["metadata"]["labels"]
        assert labels[f"{LABEL}/name"] == SAMPLE
        assert labels[f"{LABEL}/worker-type"] == wtype.lower()
        assert labels["app.sedna.io"] == f"{SAMPLE}-{wtype}-svc"
        assert dep["spec"]["selector"]["matchLabels"][f"{LABEL}/uid"] == uid
        init = dep["spec"]["template"]["spec"]["initContainers"]
        assert init and "s3://kubeedge/models/model.pb" in " ".join(init[0]["args"])
        assert dep["spec"]["template"]["spec"]["nodeName"] == NODE
        assert "replicas" not in dep["spec"] or dep["spec"]["replicas"] == 1
        assert SPEC_HASH_ANNOTATION in meta["annotations"]
    svc = api.services.get(ns, CLOUD_SERVICE)
    assert svc["spec"]["selector"] == {
        f"{LABEL}/name": SAMPLE, f"{LABEL}/uid": uid, f"{LABEL}/worker-type": "cloud"
    }  # fmt: skip


def test_sedna_update_service_case_rolls_the_hem_change_into_the_edge_deployment(
    api: Api, started: Started
) -> None:
    """Sedna's Test_updateService: a hard-example-mining parameter changes value1 -> value2."""
    lc = started.lc
    api.create(started.sample)
    api.until_running()
    cloud_before = api.wait_deployment(CLOUD_DEPLOYMENT)
    svc = api.ji()
    params = svc["spec"]["edgeWorker"]["hardExampleMining"]["parameters"]
    params[0]["value"] = "value2"
    api.patch_spec({"edgeWorker": {"hardExampleMining": {"parameters": params}}})
    edge = api.wait_deployment(
        EDGE_DEPLOYMENT, lambda d: '"value":"value2"' in env_of(d)["HEM_PARAMETERS"]
    )
    assert env_of(edge)["HEM_PARAMETERS"].startswith('[{"key":"threshold_img","value":"value2"}')
    api.wait_event("SuccessfulUpdate", EDGE_DEPLOYMENT)
    lc.wait_for("insert", pred=lambda m: "value2" in json.dumps(m.payload))
    # the cloud worker did not change: not rewritten
    cloud = api.deployment(CLOUD_DEPLOYMENT)
    assert cloud is not None
    assert cloud["metadata"]["resourceVersion"] == cloud_before["metadata"]["resourceVersion"]
    # the new edge pod replaces the old one once Ready; the service stays Running
    api.until_running()
    wait_until(lambda: api.run_pods() == 0 and len(api.names("pods")) == 2, 10.0, "rollout")
    assert api.latest()[0] == "Running"


def test_a_cloud_template_change_is_rolled_out(api: Api, started: Started) -> None:
    api.create(started.sample)
    api.until_running()
    template = api.ji()["spec"]["cloudWorker"]["template"]
    template["spec"]["containers"][0]["image"] = "big:v2"
    api.patch_spec({"cloudWorker": {"template": template}})
    cloud = api.wait_deployment(
        CLOUD_DEPLOYMENT,
        lambda d: d["spec"]["template"]["spec"]["containers"][0]["image"] == "big:v2",
    )
    assert env_of(cloud)["BIG_MODEL_BIND_PORT"] == "5000"  # re-injected, not lost
    assert len(cloud["spec"]["template"]["spec"]["initContainers"]) == 1


def test_each_owned_object_deleted_is_healed(api: Api, started: Started) -> None:
    ji = started.sample
    ji["spec"]["cloudWorker"]["hpa"] = {"minReplicas": 1, "maxReplicas": 3}
    api.create(ji)
    api.until_running()
    hpa = f"hpa-{CLOUD_DEPLOYMENT}"
    for client, name in (
        (api.deployments, CLOUD_DEPLOYMENT),
        (api.deployments, EDGE_DEPLOYMENT),
        (api.services, CLOUD_SERVICE),
        (api.hpas, hpa),
    ):
        old = client.get(api.ns, name)["metadata"]["uid"]
        client.delete(api.ns, name)

        def healed(client: Any = client, name: str = name, old: str = old) -> bool:
            items = client.list(api.ns)["items"]
            return any(o["metadata"]["name"] == name and o["metadata"]["uid"] != old for o in items)

        wait_until(healed, 10.0, f"{name} recreated")
    api.until_running()
    assert api.names("deployments") == sorted([CLOUD_DEPLOYMENT, EDGE_DEPLOYMENT])
    assert api.names("hpas") == [hpa]
    assert "Failed" not in api.condition_types()


def test_a_service_whose_spec_drifted_is_rolled_back_in_place(api: Api, started: Started) -> None:
    """A Service of ours without its spec hash (an older GM's, or edited along with
    it) gets Sedna's port 5000 back on the next sync; its name, UID and cluster IP stay."""
    api.create(started.sample)
    api.until_running()
    before = api.services.get(api.ns, CLOUD_SERVICE)
    drifted = dict(before)
    drifted["metadata"] = {**before["metadata"], "annotations": {}}
    drifted["spec"] = {
        **before["spec"],
        "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 80}],
    }
    api.services.replace(api.ns, CLOUD_SERVICE, drifted)
    api.jis.patch(api.ns, SAMPLE, {"metadata": {"labels": {"poke": "1"}}})  # a sync
    healed = wait_until(
        lambda: (
            (s := api.services.get(api.ns, CLOUD_SERVICE))["spec"]["ports"][0]["port"] == 5000 and s
        ),
        what="the Service rolled back",
    )
    assert healed["spec"]["ports"] == before["spec"]["ports"]
    assert healed["metadata"]["uid"] == before["metadata"]["uid"]
    assert healed["spec"].get("clusterIP") == before["spec"].get("clusterIP")
    assert healed["metadata"]["annotations"][SPEC_HASH_ANNOTATION]


def test_hpas_follow_the_spec(api: Api, started: Started) -> None:
    ji = started.sample
    metrics = [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]  # fmt: skip
    ji["spec"]["edgeWorker"]["hpa"] = {"minReplicas": 1, "maxReplicas": 2, "metrics": metrics}
    api.create(ji)
    name = f"hpa-{EDGE_DEPLOYMENT}"
    wait_until(lambda: api.names("hpas") == [name], 10.0, "edge HPA")
    hpa = api.hpas.get(api.ns, name)
    assert hpa["spec"] == {
        "maxReplicas": 2,
        "minReplicas": 1,
        "metrics": metrics,
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": EDGE_DEPLOYMENT},
    }
    assert hpa["metadata"]["labels"][f"{LABEL}/worker-type"] == "edge"
    assert hpa["metadata"]["ownerReferences"][0]["kind"] == "JointInferenceService"
    api.patch_spec({"edgeWorker": {"hpa": {"maxReplicas": 4}}})
    wait_until(lambda: api.hpas.get(api.ns, name)["spec"]["maxReplicas"] == 4, 10.0, "update")
    api.patch_spec({"cloudWorker": {"hpa": {"maxReplicas": 3}}})
    wait_until(lambda: len(api.names("hpas")) == 2, 10.0, "cloud HPA")
    api.patch_spec({"edgeWorker": {"hpa": None}, "cloudWorker": {"hpa": None}})
    wait_until(lambda: api.names("hpas") == [], 10.0, "HPAs deleted with the spec")
    api.wait_event("SuccessfulDelete", name)


def test_a_missing_model_waits_and_the_service_starts_when_it_appears(
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    deployment_controller: DeploymentControllerFactory,
    sample_dir: Path,
) -> None:
    deployment_controller()
    make_gm()
    api.create(sample_service(sample_dir))
    wait_until(lambda: api.latest() == ("Pending", "ModelNotFound"), 10.0, "ModelNotFound")
    msg = api.wait_event("ModelNotFound")
    assert "spec.cloudWorker.model.name" in msg and BIG in msg
    assert api.names("deployments") == []
    api.create_models()
    api.until_running()


def ji_samples(ref: Path) -> list[dict[str, Any]]:
    import yaml

    out = []
    for f in sorted(ref.glob("*.yaml")):
        for doc in yaml.safe_load_all(f.read_text()):
            if doc and doc.get("kind") == "JointInferenceService":
                doc["metadata"].pop("namespace", None)
                out.append(doc)
    return out


def test_every_sedna_sample_is_accepted_and_reconciled(
    api: Api,
    make_gm: GMFactory,
    deployment_controller: DeploymentControllerFactory,
    sample_dir: Path,
) -> None:
    samples = ji_samples(sample_dir)
    assert samples
    deployment_controller()
    make_gm()
    for s in samples:
        for worker in ("cloudWorker", "edgeWorker"):
            name = s["spec"][worker]["model"]["name"]
            if name not in [m["metadata"]["name"] for m in api.models.list(api.ns)["items"]]:
                api.models.create(api.ns, {"apiVersion": "sedna.io/v1alpha1", "kind": "Model",
                                           "metadata": {"name": name},
                                           "spec": {"url": "/m", "format": "pb"}})  # fmt: skip
        api.create(s)
    for s in samples:
        api.until_running(s["metadata"]["name"])
        name = s["metadata"]["name"]
        assert f"{name}-deployment-cloud" in api.names("deployments")
        assert f"{name}-deployment-edge" in api.names("deployments")


def test_a_failed_deployment_fails_the_service_for_good(
    api: Api,
    make_gm: GMFactory,
    deployment_controller: DeploymentControllerFactory,
    sample_dir: Path,
) -> None:
    """The edge pod never becomes Ready: past its progress deadline (virtual time) the
    Deployment fails, the service is Failed (Sedna's workerFailed) and, as in Sedna, left
    as it is: a deleted Deployment is no longer recreated."""
    from sedna.runtime import FakeClock

    clock = FakeClock()
    deployment_controller(clock=clock)
    gm = make_gm()
    api.create_models()
    api.create(sample_service(sample_dir))
    api.wait_condition("Pending")
    wait_until(lambda: len(api.names("pods")) == 2, 10.0, "pods")
    for p in api.pods.list(api.ns)["items"]:
        if "deployment-cloud" in p["metadata"]["name"]:
            api.pods.patch(api.ns, p["metadata"]["name"], {"status": {
                "phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
                subresource="status")  # fmt: skip
    api.wait_deployment(
        CLOUD_DEPLOYMENT, lambda d: (d.get("status") or {}).get("availableReplicas") == 1
    )
    wait_until(clock.has_waiters, 10.0, "the deadline check on the clock")
    clock.step(601)
    api.wait_condition("Failed")
    status = api.status()
    assert api.latest() == ("Failed", "workerFailed")
    assert (status["active"], status["failed"]) == (1, 1)
    assert "ProgressDeadlineExceeded" not in status["conditions"][-1]["message"]
    assert EDGE_DEPLOYMENT in status["conditions"][-1]["message"]
    assert api.condition_types() == ["Pending", "Failed"]
    api.wait_event("workerFailed", "timed out progressing")
    api.deployments.delete(api.ns, CLOUD_DEPLOYMENT)
    wait_until(lambda: api.names("deployments") == [EDGE_DEPLOYMENT], 10.0, "deleted")
    api.jis.patch(api.ns, SAMPLE, {"metadata": {"labels": {"poke": "1"}}})  # a sync
    assert gm.manager is not None
    assert gm.manager.features[0].controller.wait_idle(5)  # type: ignore[attr-defined]
    assert api.condition_types() == ["Pending", "Failed"]
    assert api.names("deployments") == [EDGE_DEPLOYMENT]


def test_changes_reach_the_lc_as_insert_and_a_move_deletes_on_the_old_node(
    api: Api, started: Started, make_lc: LCFactory
) -> None:
    """Sedna's GM sends `update` on a change, which its LC rejects; we send `insert`."""
    old = started.lc
    new = make_lc(started.gm, "edge-node-2")
    api.create(started.sample)
    old.wait_for("insert")
    api.patch_spec({"edgeWorker": {"hardExampleMining": {"name": "CrossEntropy"}}})
    old.wait_for("insert", pred=lambda m: "CrossEntropy" in json.dumps(m.payload))
    template = api.ji()["spec"]["edgeWorker"]["template"]
    template["spec"]["nodeName"] = "edge-node-2"
    api.patch_spec({"edgeWorker": {"template": template}})
    old.wait_for("delete")
    new.wait_for("insert")
    assert not old.messages("update") and not new.messages("update")


def test_healing_finds_the_owner_by_reference_not_by_name(api: Api, started: Started) -> None:
    """Sedna cuts a Deployment's name at "-deployment" to find its service: for a service
    named `web-deployment-a` it looks for `web` and heals nothing (or the wrong one)."""
    ji = started.sample
    ji["metadata"]["name"] = "web-deployment-a"
    api.create(ji)
    api.until_running("web-deployment-a")
    name = "web-deployment-a-deployment-edge"
    old = api.deployments.get(api.ns, name)["metadata"]["uid"]
    api.deployments.delete(api.ns, name)
    api.wait_deployment(name, lambda d: d["metadata"]["uid"] != old)


def test_a_model_deleted_while_running_leaves_the_workers_running(
    api: Api, started: Started, logs: LogCapture
) -> None:
    gm = started.gm
    api.create(started.sample)
    api.until_running()
    before = {d: api.deployments.get(api.ns, d)["metadata"]["uid"]
              for d in (CLOUD_DEPLOYMENT, EDGE_DEPLOYMENT)}  # fmt: skip
    api.models.delete(api.ns, BIG)
    api.jis.patch(api.ns, SAMPLE, {"metadata": {"labels": {"poke": "1"}}})  # a sync
    logs.wait(f"{api.ns}/{SAMPLE}: spec.cloudWorker.model.name", "workers are kept as they are")
    assert gm.manager is not None
    assert gm.manager.features[0].controller.wait_idle(5)
    assert api.condition_types() == ["Pending", "Running"]  # no flapping either
    assert {d: api.deployments.get(api.ns, d)["metadata"]["uid"] for d in before} == before


def test_strays_it_controls_are_pruned_and_a_changed_service_is_rolled_back(
    api: Api, started: Started
) -> None:
    """A Deployment and a Service the service controls but does not plan are deleted; a
    Service whose spec-hash is not the plan's gets the planned spec back."""
    api.create(started.sample)
    api.until_running()
    ji = api.ji()
    owners = [{"apiVersion": ji["apiVersion"], "kind": ji["kind"], "name": SAMPLE,
               "uid": ji["metadata"]["uid"], "controller": True}]  # fmt: skip
    labels = {"app": "stray"}
    # as every object the GM makes: the owner kind's label, which its caches select on
    mark = {"jointinferenceservice.sedna.io/name": SAMPLE}
    api.deployments.create(api.ns, {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": f"{SAMPLE}-deployment-old", "ownerReferences": owners,
                     "labels": mark},
        "spec": {"replicas": 0, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels}, "spec": {"containers": [{"name": "w", "image": "x"}]}}},
    })  # fmt: skip
    api.services.create(api.ns, {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": f"{SAMPLE}-old", "ownerReferences": owners, "labels": mark},
        "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": 80}]},
    })  # fmt: skip
    svc = api.services.get(api.ns, CLOUD_SERVICE)
    planned = svc["metadata"]["annotations"][SPEC_HASH_ANNOTATION]
    svc["metadata"]["annotations"][SPEC_HASH_ANNOTATION] = "stale"
    svc["spec"]["ports"] = [{"port": 1234, "targetPort": 1234}]
    api.services.replace(api.ns, CLOUD_SERVICE, svc)
    wait_until(
        lambda: api.names("deployments") == sorted([CLOUD_DEPLOYMENT, EDGE_DEPLOYMENT]),
        10.0,
        "stray Deployment pruned",
    )
    wait_until(lambda: api.names("services") == [CLOUD_SERVICE], 10.0, "stray Service pruned")

    def rolled_back() -> dict[str, Any] | None:
        s = api.services.get(api.ns, CLOUD_SERVICE)
        return s if s["metadata"]["annotations"][SPEC_HASH_ANNOTATION] == planned else None

    ports = wait_until(rolled_back, 10.0, "service rolled back")["spec"]["ports"]
    assert [(p["port"], p["targetPort"]) for p in ports] == [(5000, 5000)]
    assert "Failed" not in api.condition_types()
