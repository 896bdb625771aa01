"""FeatureExtractionService: the Deployment and Service with Sedna's names and env; the
second-sync flip to Failed and the unset-replicas panic of Sedna's controller fixed; LC
metrics; healing; a restart; malformed specs and reports."""

from __future__ import annotations

from typing import Any

from support.logs import LogCapture

from .helpers import GM, Api, TestLC, env_of, feature_extraction, model, wait_until

KIND = "FeatureExtractionService"
NAME = "fe-demo"
DEPLOYMENT = f"{NAME}-deployment-fe"


def start(make_gm: Any, api: Api, **spec: Any) -> GM:
    gm: GM = make_gm()
    api.create(model("fe-model"))
    api.create(feature_extraction(**spec))
    return gm


def test_creates_sednas_deployment_and_service(make_gm: Any, api: Api) -> None:
    start(make_gm, api, kafkaSupport=True)
    dep = api.wait_deployment(DEPLOYMENT)
    assert dep["spec"]["replicas"] == 2
    pod_spec = dep["spec"]["template"]["spec"]
    env = env_of(pod_spec)
    assert env["NAMESPACE"] == api.ns and env["SERVICE_NAME"] == NAME
    assert env["LC_SERVER"] == "http://localhost:9100"
    assert env["KAFKA_ENABLED"] == "true"
    assert len(env["WORKER_NAME"]) == 5
    assert env["MODEL_URL"] == "/downloads/models/m.pth"  # fetched by the storage initializer
    assert pod_spec["initContainers"][0]["name"] == "storage-initializer"
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert labels["featureextractionservice.sedna.io/worker-type"] == "fe"
    assert labels["app.sedna.io"] == f"{NAME}-fe-svc"
    svc = api.wait_service(f"{NAME}-fe")
    assert [(p["name"], p["port"]) for p in svc["spec"]["ports"]] == [("tcp-0", 6000)]


def test_no_kafka_env_without_kafka_support(make_gm: Any, api: Api) -> None:
    start(make_gm, api)
    assert "KAFKA_ENABLED" not in env_of(
        api.wait_deployment(DEPLOYMENT)["spec"]["template"]["spec"]
    )


def test_status_running_and_stays_running_past_the_second_sync(make_gm: Any, api: Api) -> None:
    start(make_gm, api)
    api.wait_deployment(DEPLOYMENT)
    api.wait_condition(KIND, NAME, "Pending")
    api.deployment_available(DEPLOYMENT)
    status = api.wait_condition(KIND, NAME, "Running")
    assert (status["active"], status["failed"]) == (2, 0)
    # Sedna's controller flips to Failed here (it expects 3 Deployments): more syncs
    api.deployment_available(DEPLOYMENT)
    api.owners[KIND].patch(api.ns, NAME, {"metadata": {"labels": {"touched": "1"}}})
    wait_until(
        lambda: any(e["reason"] == "SuccessfulCreate" for e in api.events_of(NAME)), 5.0, "events"
    )
    assert api.condition(KIND, NAME) == "Running"
    api.deployment_available(DEPLOYMENT, ready=False)
    status = api.wait_condition(KIND, NAME, "Failed")
    assert status["failed"] == 2


def test_unset_replicas_defaults_to_one(make_gm: Any, api: Api) -> None:
    make_gm()
    api.create(model("fe-model"))
    obj = feature_extraction()
    del obj["spec"]["replicas"]
    api.create(obj)
    assert api.wait_deployment(DEPLOYMENT)["spec"]["replicas"] == 1


def test_missing_model_waits_then_starts(make_gm: Any, api: Api) -> None:
    make_gm()
    api.create(feature_extraction())
    status = api.wait_condition(KIND, NAME, "Pending")
    assert status["conditions"][-1]["reason"] == "ModelNotFound"
    assert status["conditions"][-1]["message"].startswith("spec.model.name:")
    api.create(model("fe-model"))
    api.wait_deployment(DEPLOYMENT)


def test_deleted_deployment_and_service_are_made_again_and_restart(make_gm: Any, api: Api) -> None:
    gm = start(make_gm, api)
    first = api.wait_deployment(DEPLOYMENT)
    api.wait_service(f"{NAME}-fe")
    api.deployments.delete(api.ns, DEPLOYMENT)
    api.services.delete(api.ns, f"{NAME}-fe")
    wait_until(
        lambda: (
            (d := api._maybe(api.deployments, DEPLOYMENT))
            and d["metadata"]["uid"] != first["metadata"]["uid"]
        ),
        10.0,
        "a new deployment",
    )
    api.wait_service(f"{NAME}-fe")
    gm.restart()
    api.deployment_available(DEPLOYMENT)
    api.wait_condition(KIND, NAME, "Running")
    assert len(api.deployments.list(api.ns)["items"]) == 1
    assert len(api.services.list(api.ns)["items"]) == 1


def test_metrics_from_the_lc_of_a_worker_node(
    make_gm: Any, api: Api, make_lc: Any, logs: LogCapture
) -> None:
    gm = start(make_gm, api)
    api.wait_deployment(DEPLOYMENT)
    api.wait_condition(KIND, NAME, "Pending")
    # a pod of the Deployment, as its ReplicaSet would make it, bound to edge0
    dep = api.deployment(DEPLOYMENT)
    api.pods.create(
        api.ns,
        {
            "metadata": {
                "name": "fe-pod-1",
                "labels": dep["spec"]["template"]["metadata"]["labels"],
            },
            "spec": {**dep["spec"]["template"]["spec"], "nodeName": "edge0"},
        },
    )
    edge0: TestLC = make_lc(gm, "edge0")
    other: TestLC = make_lc(gm, "edge1")
    report = {
        "phase": "inference",
        "status": "ok",
        "output": {"ownerInfo": {"fps": 12.5, "camera": "c1", "startTime": "x"}},
    }
    other.report(api.ns, KIND, NAME, report)
    logs.wait("none of its workers runs on that node")
    edge0.report(api.ns, KIND, NAME, {"output": {"ownerInfo": "nope"}})
    logs.wait("content.output.ownerInfo")
    api.wait_event_on(NAME, "InvalidReport", "content.output.ownerInfo")
    edge0.report(api.ns, KIND, NAME, report)
    status = api.wait_status(KIND, NAME, lambda s: s.get("metrics"), "metrics")
    assert sorted((m["key"], m["value"]) for m in status["metrics"]) == [
        ("camera", "c1"),
        ("fps", "12.5"),
    ]
    # the controller's status writes keep the metrics
    api.deployment_available(DEPLOYMENT)
    status = api.wait_condition(KIND, NAME, "Running")
    assert len(status["metrics"]) == 2


def test_malformed_specs_name_the_field(make_gm: Any, api: Api) -> None:
    make_gm()
    api.create(model("fe-model"))
    cases = {
        "no-model": ({"model": None}, "spec.model"),
        "bad-replicas": ({"replicas": -1}, "spec.replicas"),
        "bad-kafka": ({"kafkaSupport": "yes"}, "spec.kafkaSupport"),
        "bad-env": (
            {
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "fe", "image": "i", "env": [{"name": "A", "value": 3}]}
                        ]
                    }
                }
            },
            "spec.template.spec.containers[0].env[0].value",
        ),
        # refused by the API server, not by our checks: its field, under the template
        "bad-ports": (
            {"template": {"spec": {"containers": [{"name": "fe", "image": "i", "ports": "x"}]}}},
            "spec.template.spec.containers[0].ports",
        ),
    }
    for name, (spec, _field) in cases.items():
        obj = feature_extraction(name, **spec)
        if spec.get("model", 0) is None:
            del obj["spec"]["model"]
        api.create(obj)
    for name, (_spec, field) in cases.items():
        status = api.wait_condition(KIND, name, "Failed")
        assert status["conditions"][-1]["message"].startswith(field + ":"), status
        api.wait_event_on(name, "InvalidSpec", field)
