"""Deployments, services, HPAs and node addresses, against the API server."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from sedna.runtime.kube import (
    DEPLOYMENTS,
    HPAS,
    JOINT_INFERENCE_SERVICES,
    NODES,
    SECRETS,
    SERVICES,
    KubeClient,
    NotFound,
)
from sedna.runtime.workers import MountURL, WorkerMount, WorkerParam, WorkerRuntime

from .conftest import assert_contains, load_expected, secret_body


@pytest.fixture()
def ji_service(kube: KubeClient, namespace: str, sample_dir: Path) -> dict[str, Any]:
    """Sedna's sample JointInferenceService, in the test namespace, and an S3 secret."""
    body = yaml.safe_load((sample_dir / "jointinferenceservice_v1alpha1.yaml").read_text())
    body["metadata"]["namespace"] = namespace
    kube.resource(SECRETS).create(namespace, secret_body("s3-secret", "s3.amazonaws.com"))
    created: dict[str, Any] = kube.resource(JOINT_INFERENCE_SERVICES).create(namespace, body)
    return created


def _cloud_param(namespace: str, service_name: str) -> WorkerParam:
    # Go's createOrUpdateWorker(Cloud): env, then the model mount, then common env
    return WorkerParam(
        worker_type="Cloud",
        env={
            "BIG_MODEL_BIND_PORT": "5000",
            "NAMESPACE": namespace,
            "SERVICE_NAME": service_name,
            "WORKER_NAME": "cloudworker-abcde",
        },
        mounts=[
            WorkerMount(
                url=MountURL(
                    "s3://kubeedge/models/big/model.pb",
                    download_by_initializer=True,
                    secret_name="s3-secret",
                ),
                name="model",
                env_name="MODEL_URL",
            )
        ],
    )


def test_deployment_matches_go_fixture_and_updates_idempotently(
    kube: KubeClient, namespace: str, ji_service: dict[str, Any]
) -> None:
    runtime = WorkerRuntime(kube)
    svc = ji_service
    param = _cloud_param(namespace, svc["metadata"]["name"])
    spec = {"template": svc["spec"]["cloudWorker"]["template"]}
    expected = load_expected(
        "ji_cloud_deployment.yaml", NAMESPACE=namespace, JOB_UID=svc["metadata"]["uid"]
    )

    built = runtime.build_deployment(svc, spec, param, field="spec.cloudWorker.template")
    assert built == expected
    created = runtime.create_deployment_with_template(svc, spec, param)
    assert_contains(
        kube.resource(DEPLOYMENTS).get(namespace, created["metadata"]["name"]), expected
    )

    # Go appends the initializer and env again on every update; we replace them.
    existing = kube.resource(DEPLOYMENTS).get(namespace, created["metadata"]["name"])
    updated = runtime.update_deployment_with_template(svc, existing, param)
    tspec = updated["spec"]["template"]["spec"]
    assert [c["name"] for c in tspec["initContainers"]] == ["storage-initializer"]
    assert [v["name"] for v in tspec["volumes"]] == ["sedna-storage-initializer"]
    env_names = [e["name"] for e in tspec["containers"][0]["env"]]
    assert len(env_names) == len(set(env_names))
    assert_contains(updated, {"spec": expected["spec"]})


def test_services(kube: KubeClient, namespace: str, ji_service: dict[str, Any]) -> None:
    runtime = WorkerRuntime(kube)
    svc = ji_service
    host = runtime.create_edgemesh_service(svc, "Cloud", 5000)
    assert host == f"helmet-detection-inference-example-cloud.{namespace}"
    em = kube.resource(SERVICES).get(namespace, "helmet-detection-inference-example-cloud")
    labels = {
        "jointinferenceservice.sedna.io/name": "helmet-detection-inference-example",
        "jointinferenceservice.sedna.io/uid": svc["metadata"]["uid"],
        "jointinferenceservice.sedna.io/worker-type": "cloud",
    }
    assert_contains(
        em,
        {
            "metadata": {"labels": labels},
            "spec": {
                "selector": labels,
                "ports": [{"name": "tcp-0", "protocol": "TCP", "port": 5000, "targetPort": 5000}],
            },
        },
    )
    assert em["metadata"]["ownerReferences"][0]["uid"] == svc["metadata"]["uid"]

    node_port = runtime.create_nodeport_service(svc, "Edge", 8080, "10.0.0.7")
    np_ = kube.resource(SERVICES).get(namespace, "helmet-detection-inference-example-edge")
    assert_contains(
        np_,
        {
            "spec": {
                "type": "NodePort",
                "externalIPs": ["10.0.0.7"],
                "ports": [{"port": 8080, "targetPort": 8080}],
            }
        },
    )
    assert node_port == int(np_["spec"]["ports"][0].get("nodePort") or 0)


def test_hpa_create_update_delete(
    kube: KubeClient, namespace: str, ji_service: dict[str, Any]
) -> None:
    runtime = WorkerRuntime(kube)
    svc = ji_service
    target = "helmet-detection-inference-example-deployment-cloud"
    hpa = {
        "minReplicas": 1,
        "maxReplicas": 3,
        "metrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 60},
                },
            }
        ],
    }
    # update creates when missing, as Sedna's UpdateHPA does
    runtime.update_hpa(svc, "Deployment", target, "Cloud", hpa)
    got = kube.resource(HPAS).get(namespace, "hpa-" + target)
    assert_contains(
        got,
        {
            "metadata": {
                "labels": {"jointinferenceservice.sedna.io/worker-type": "cloud"},
                "ownerReferences": [{"uid": svc["metadata"]["uid"], "controller": True}],
            },
            "spec": {
                "minReplicas": 1,
                "maxReplicas": 3,
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
                "metrics": hpa["metrics"],
            },
        },
    )
    runtime.update_hpa(svc, "Deployment", target, "Cloud", {"maxReplicas": 5})
    got = kube.resource(HPAS).get(namespace, "hpa-" + target)
    assert got["spec"]["maxReplicas"] == 5
    assert "minReplicas" not in got["spec"] and "metrics" not in got["spec"]

    runtime.delete_hpa(namespace, "hpa-" + target)
    with pytest.raises(NotFound):
        kube.resource(HPAS).get(namespace, "hpa-" + target)
    runtime.delete_hpa(namespace, "hpa-" + target)  # already gone: fine


def test_node_ip_prefers_external(kube: KubeClient) -> None:
    runtime = WorkerRuntime(kube)
    nodes = kube.resource(NODES)
    for name, addresses in (
        ("wk-both", [("InternalIP", "192.168.0.2"), ("ExternalIP", "1.2.3.4")]),
        ("wk-internal", [("Hostname", "wk-internal"), ("InternalIP", "192.168.0.3")]),
        ("wk-none", [("Hostname", "wk-none")]),
    ):
        with contextlib.suppress(NotFound):
            nodes.delete(None, name)
        nodes.create(None, {"metadata": {"name": name}})
        node = nodes.get(None, name)
        node["status"] = {"addresses": [{"type": t, "address": a} for t, a in addresses]}
        nodes.replace_status(None, name, node)
    assert runtime.node_ip_by_name("wk-both") == "1.2.3.4"
    assert runtime.node_ip_by_name("wk-internal") == "192.168.0.3"
    with pytest.raises(LookupError, match="wk-none"):
        runtime.node_ip_by_name("wk-none")
    with pytest.raises(NotFound):
        runtime.node_ip_by_name("wk-missing")
