"""Worker pods compared with fixtures derived by hand from Sedna's Go GM.

Each fixture says which Go rule it checks. Every pod is also created through
the real client against the API server and read back unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from sedna.runtime.kube import PODS, KubeClient
from sedna.runtime.workers import (
    CredentialInjection,
    MountURL,
    WorkerMount,
    WorkerParam,
    WorkerRuntime,
)

from .conftest import assert_contains, load_expected
from .il_params import inference_param, train_or_eval_param

TRAIN_COND = {
    "model": {"format": "pb", "url": "/model/frozen.pb"},
    "dataURL": "/incremental_learning/data/train/data_1.txt",
    "outputDir": "/output/train/1",
}
EVAL_COND = {
    "models": [{"url": "/output/train/1/model.pb"}, {"url": "/model/frozen.pb"}],
    "dataURL": "/incremental_learning/data/eval/data_1.txt",
}

GENERIC_TEMPLATE = {
    "metadata": {"labels": {"app": "demo"}, "annotations": {"note": "kept"}},
    "spec": {
        "containers": [
            {"name": "worker", "image": "busybox", "env": [{"name": "USER_VAR", "value": "1"}]}
        ]
    },
}


@dataclass
class Case:
    id: str
    fixture: str
    template: Callable[[dict[str, Any]], dict[str, Any]]
    param: Callable[[dict[str, Any]], WorkerParam]
    mode: CredentialInjection = "secretKeyRef"
    runtime_kwargs: dict[str, Any] = field(default_factory=dict)
    field: str = "spec.template"


def _generic(mounts: list[WorkerMount]) -> Callable[[dict[str, Any]], WorkerParam]:
    return lambda w: WorkerParam(worker_type="train", mounts=mounts)


def _hot(w: dict[str, Any]) -> WorkerParam:
    job = w["job"]
    job["spec"]["deploySpec"]["model"].update(hotUpdateEnabled=True, pollPeriodSeconds=60)
    return inference_param(job, w["deploy-model"])


CASES = [
    Case(
        "il-train",
        "il_train.yaml",
        lambda w: w["job"]["spec"]["trainSpec"]["template"],
        lambda w: train_or_eval_param(
            "train", w["job"], w["initial-model"], w["dataset"], TRAIN_COND
        ),
        field="spec.trainSpec.template",
    ),
    Case(
        "il-eval",
        "il_eval.yaml",
        lambda w: w["job"]["spec"]["evalSpec"]["template"],
        lambda w: train_or_eval_param(
            "eval", w["job"], w["initial-model"], w["dataset"], EVAL_COND
        ),
        field="spec.evalSpec.template",
    ),
    Case(
        "il-inference",
        "il_inference.yaml",
        lambda w: w["job"]["spec"]["deploySpec"]["template"],
        lambda w: inference_param(w["job"], w["deploy-model"]),
        field="spec.deploySpec.template",
    ),
    Case(
        "il-inference-hot-update",
        "il_inference_hot_update.yaml",
        lambda w: w["job"]["spec"]["deploySpec"]["template"],
        _hot,
        field="spec.deploySpec.template",
    ),
    Case(
        "s3-secretKeyRef",
        "s3_secret_key_ref.yaml",
        lambda w: GENERIC_TEMPLATE,
        _generic(
            [
                WorkerMount(
                    url=MountURL(
                        "s3://kubeedge/model/base_model/model.pb",
                        download_by_initializer=True,
                        secret_name="s3-secret",
                    ),
                    env_name="MODEL_URL",
                )
            ]
        ),
    ),
    Case(
        "s3-env-mode",
        "s3_env_mode.yaml",
        lambda w: GENERIC_TEMPLATE,
        _generic(
            [
                WorkerMount(
                    url=MountURL(
                        "s3://kubeedge/model/base_model/model.pb",
                        download_by_initializer=True,
                        secret_name="s3-secret",
                    ),
                    env_name="MODEL_URL",
                )
            ]
        ),
        mode="env",
    ),
    Case(
        "s3-output-usehttps-0",
        "s3_output_usehttps_0.yaml",
        lambda w: GENERIC_TEMPLATE,
        _generic(
            [
                WorkerMount(
                    url=MountURL("s3://kubeedge/output/", secret_name="s3-plain"),
                    env_name="OUTPUT_URL",
                )
            ]
        ),
    ),
    Case(
        "http-several-urls",
        "http_several_urls.yaml",
        lambda w: GENERIC_TEMPLATE,
        _generic(
            [
                WorkerMount(
                    urls=[
                        MountURL(
                            "https://example.com/models/a.pb",
                            download_by_initializer=True,
                            secret_name="s3-secret",
                        ),
                        MountURL("http://files.local:8080/m/b.pb", download_by_initializer=True),
                    ],
                    env_name="MODEL_URLS",
                )
            ]
        ),
        runtime_kwargs={
            "storage_initializer_image": "registry.local/sedna-storage-initializer:dev"
        },
    ),
    Case(
        "host-dir-enable-if-host-path",
        "host_dir_enable_if_host_path.yaml",
        lambda w: GENERIC_TEMPLATE,
        _generic(
            [
                WorkerMount(url=MountURL("/data/images/", is_dir=True), env_name="IMAGES_DIR"),
                WorkerMount(
                    urls=[
                        MountURL("s3://bucket/x.txt", enable_if_host_path=True),
                        MountURL("/data/labels/x.txt", enable_if_host_path=True),
                    ],
                    env_name="LABELS",
                ),
            ]
        ),
    ),
    Case(
        "indirect-index",
        "indirect_index.yaml",
        lambda w: GENERIC_TEMPLATE,
        _generic(
            [
                WorkerMount(
                    url=MountURL(
                        "/data/index/index.txt",
                        indirect=True,
                        download_by_initializer=True,
                        secret_name="s3-secret",
                    ),
                    env_name="ORIGINAL_DATASET_URL",
                ),
                WorkerMount(
                    url=MountURL(
                        "s3://kubeedge/data/index.txt",
                        indirect=True,
                        download_by_initializer=True,
                        secret_name="s3-plain",
                    ),
                    env_name="TEST_INDEX_URL",
                ),
            ]
        ),
        mode="env",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_pod_matches_go_fixture(
    case: Case, kube: KubeClient, namespace: str, il_world: dict[str, Any]
) -> None:
    job = il_world["job"]
    runtime = WorkerRuntime(kube, credential_injection=case.mode, **case.runtime_kwargs)
    template = case.template(il_world)
    param = case.param(il_world)
    expected = load_expected(case.fixture, NAMESPACE=namespace, JOB_UID=job["metadata"]["uid"])

    pod = runtime.build_pod(job, template, param, field=case.field)
    assert pod == expected

    created = runtime.create_pod_with_template(job, template, param, field=case.field)
    assert created["metadata"]["name"].startswith(expected["metadata"]["generateName"])
    got = kube.resource(PODS).get(namespace, created["metadata"]["name"])
    # the server adds defaults (dnsPolicy, schedulerName, ...), as kube-apiserver does
    assert_contains(got, expected)
