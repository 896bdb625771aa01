"""Bad input gives a WorkerError naming the job and the field; nothing is created."""

from __future__ import annotations

from typing import Any

import pytest

from sedna.runtime.kube import PODS, SECRETS, KubeClient
from sedna.runtime.workers import MountURL, WorkerError, WorkerMount, WorkerParam, WorkerRuntime

from .conftest import secret_body

TEMPLATE = {"spec": {"containers": [{"name": "w", "image": "busybox"}]}}


def _param(url: MountURL) -> WorkerParam:
    return WorkerParam(worker_type="train", mounts=[WorkerMount(url=url, env_name="X")])


@pytest.mark.parametrize(
    ("template", "field"),
    [
        ({"spec": {"containers": []}}, "spec.trainSpec.template.spec.containers"),
        ({"spec": {}}, "spec.trainSpec.template.spec.containers"),
        ({}, "spec.trainSpec.template.spec"),
    ],
    ids=["empty-containers", "no-containers", "no-spec"],
)
def test_template_without_containers(
    kube: KubeClient, namespace: str, il_world: dict[str, Any], template: Any, field: str
) -> None:
    job = il_world["job"]
    with pytest.raises(WorkerError) as err:
        WorkerRuntime(kube).create_pod_with_template(
            job, template, WorkerParam(worker_type="train"), field="spec.trainSpec.template"
        )
    assert err.value.job == f"{namespace}/helmet-detection-demo"
    assert err.value.field == field
    assert f"IncrementalLearningJob {namespace}/helmet-detection-demo: {field}" in str(err.value)
    assert kube.resource(PODS).list(namespace)["items"] == []


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("s3://bucket:abc/model.pb", "invalid port"),
        ("http://[::1/model.pb", "missing ']'"),
        ("/data/%zz/model.pb", "invalid URL escape"),
        ("s3://bucket/a\nb", "control character"),
        ("", "empty URL"),
        ("s3:bucket/model.pb", "opaque URL"),
        ("ftp://host/model.pb", "unsupported URL scheme 'ftp'"),
        ("file:///model.pb", "unsupported URL scheme 'file'"),
    ],
)
def test_bad_urls(
    kube: KubeClient, namespace: str, il_world: dict[str, Any], url: str, message: str
) -> None:
    param = _param(
        MountURL(url, download_by_initializer=True, field="models[initial-model].spec.url")
    )
    with pytest.raises(WorkerError, match=message) as err:
        WorkerRuntime(kube).build_pod(il_world["job"], TEMPLATE, param)
    assert err.value.field == "models[initial-model].spec.url"
    assert err.value.job == f"{namespace}/helmet-detection-demo"


def test_default_url_field_names_the_mount(kube: KubeClient, il_world: dict[str, Any]) -> None:
    param = WorkerParam(
        worker_type="eval",
        mounts=[
            WorkerMount(urls=[MountURL("/ok.txt"), MountURL("gopher://x/y")], env_name="MODEL_URLS")
        ],
    )
    with pytest.raises(WorkerError) as err:
        WorkerRuntime(kube).build_pod(
            il_world["job"], TEMPLATE, param, field="spec.evalSpec.template"
        )
    assert err.value.field == "spec.evalSpec.template.mounts[MODEL_URLS].urls[1]"


def test_missing_secret(kube: KubeClient, namespace: str, il_world: dict[str, Any]) -> None:
    param = _param(
        MountURL(
            "s3://bucket/model.pb",
            download_by_initializer=True,
            secret_name="nope",
            secret_field="models[initial-model].spec.credentialName",
        )
    )
    with pytest.raises(WorkerError, match="secret 'nope' not found") as err:
        WorkerRuntime(kube).create_pod_with_template(il_world["job"], TEMPLATE, param)
    assert err.value.field == "models[initial-model].spec.credentialName"
    assert err.value.job == f"{namespace}/helmet-detection-demo"
    assert kube.resource(PODS).list(namespace)["items"] == []


@pytest.mark.parametrize("url", ["s3://bucket/model.pb", "/data/index.txt"])
def test_secret_without_endpoint(
    kube: KubeClient, namespace: str, il_world: dict[str, Any], url: str
) -> None:
    # the Go GM ignores this error and creates a pod without credentials
    kube.resource(SECRETS).create(namespace, secret_body("no-endpoint", None))
    param = _param(
        MountURL(url, download_by_initializer=True, indirect=True, secret_name="no-endpoint")
    )
    with pytest.raises(WorkerError, match="s3-endpoint") as err:
        WorkerRuntime(kube).build_pod(il_world["job"], TEMPLATE, param)
    assert err.value.field == "spec.credentialName"


def test_secret_without_endpoint_is_fine_where_unused(
    kube: KubeClient, namespace: str, il_world: dict[str, Any]
) -> None:
    # Go only builds S3 envs for s3 and indirect URLs; an http URL ignores the secret
    kube.resource(SECRETS).create(namespace, secret_body("no-endpoint", None))
    param = _param(
        MountURL("https://host/model.pb", download_by_initializer=True, secret_name="no-endpoint")
    )
    pod = WorkerRuntime(kube).build_pod(il_world["job"], TEMPLATE, param)
    assert pod["spec"]["initContainers"][0]["env"] == [{"name": "INDIRECT_URL_MARK", "value": "@"}]


def test_job_without_kind(kube: KubeClient, il_world: dict[str, Any]) -> None:
    job = dict(il_world["job"])
    del job["kind"]
    with pytest.raises(WorkerError) as err:
        WorkerRuntime(kube).build_pod(job, TEMPLATE, WorkerParam(worker_type="train"))
    assert err.value.field == "kind"


def test_unknown_credential_mode(kube: KubeClient) -> None:
    with pytest.raises(ValueError, match="credential_injection"):
        WorkerRuntime(kube, credential_injection="plain")  # type: ignore[arg-type]


def test_null_lists_and_maps_in_a_template_are_read_as_absent(
    kube: KubeClient, namespace: str, il_world: dict[str, Any]
) -> None:
    """Regression (found by fuzzing job specs): kube reads `volumeMounts: null` as no
    mounts; the builder's merge took the None for the list and the reconcile crashed
    with a TypeError instead of making the pod."""
    job = il_world["job"]
    template = {
        "metadata": {"labels": None, "annotations": None},
        "spec": {
            "containers": [{"name": "w", "image": "busybox", "volumeMounts": None, "env": None}],
            "volumes": None,
            "initContainers": None,
        },
    }
    param = WorkerParam(
        worker_type="train",
        env={"A": "1"},
        mounts=[
            WorkerMount(url=MountURL(url="/data/train.txt", download_by_initializer=True),
                        env_name="TRAIN_DATASET_URL"),
            WorkerMount(url=MountURL(url="/model/base.pb"), env_name="BASE_MODEL_URL"),
        ],
    )  # fmt: skip
    pod = WorkerRuntime(kube).create_pod_with_template(
        job, template, param, field="spec.trainSpec.template"
    )
    (container,) = pod["spec"]["containers"]
    assert {e["name"] for e in container["env"]} >= {"A", "TRAIN_DATASET_URL", "BASE_MODEL_URL"}
    assert container["volumeMounts"] and pod["spec"]["volumes"]
