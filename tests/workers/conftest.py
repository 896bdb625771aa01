"""Fixtures of the worker-runtime tests: a KubeClient, the sample IL job and its objects."""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml

from sedna.runtime.kube import DATASETS, INCREMENTAL_LEARNING_JOBS, MODELS, SECRETS, KubeClient

FIXTURES = Path(__file__).parent / "fixtures"


def load_expected(name: str, **subst: str) -> dict[str, Any]:
    """A fixture pod with ``${NAMESPACE}``-style placeholders filled in."""
    text = (FIXTURES / name).read_text()
    for key, value in subst.items():
        text = text.replace("${" + key + "}", value)
    data: dict[str, Any] = yaml.safe_load(text)
    return data


def assert_contains(actual: Any, expected: Any, path: str = "") -> None:
    """Every field of ``expected`` is in ``actual`` with the same value; lists match item by item.

    What the server adds on its own (defaults, uid, resourceVersion) is allowed.
    """
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{path}: {actual!r} is not an object"
        for key, value in expected.items():
            assert key in actual, f"{path}.{key} missing"
            assert_contains(actual[key], value, f"{path}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), (
            f"{path}: {actual!r} != {expected!r}"
        )
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_contains(a, e, f"{path}[{i}]")
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"


def secret_body(
    name: str, endpoint: str | None, *, use_https: str | None = None, keys: bool = True
) -> dict[str, Any]:
    """An S3 credential secret as Sedna documents it."""
    ann: dict[str, str] = {}
    if endpoint is not None:
        ann["s3-endpoint"] = endpoint
    if use_https is not None:
        ann["s3-usehttps"] = use_https
    data = {}
    if keys:
        data = {
            "ACCESS_KEY_ID": base64.b64encode(b"AKID123").decode(),
            "SECRET_ACCESS_KEY": base64.b64encode(b"SECRET456").decode(),
        }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "annotations": ann},
        "data": data,
    }


@pytest.fixture()
def kube(api_client: kubernetes.client.ApiClient) -> KubeClient:
    """The project's raw-JSON client over the shared API client."""
    return KubeClient(api_client)


@pytest.fixture()
def il_world(kube: KubeClient, namespace: str, sample_dir: Path) -> dict[str, Any]:
    """Sedna's sample IncrementalLearningJob with its Model/Dataset samples, and two secrets.

    The sample Model becomes ``initial-model`` and ``deploy-model`` and the sample
    Dataset ``incremental-dataset``, the names the sample job refers to.
    """
    samples = sample_dir
    job = yaml.safe_load((samples / "incrementallearningjob_v1alpha1.yaml").read_text())
    model = yaml.safe_load((samples / "model_v1alpha1.yaml").read_text())
    dataset = yaml.safe_load((samples / "dataset_v1alpha1.yaml").read_text())
    out: dict[str, Any] = {}
    for name in ("initial-model", "deploy-model"):
        m = copy.deepcopy(model)
        m["metadata"]["name"] = name
        out[name] = kube.resource(MODELS).create(namespace, m)
    dataset["metadata"]["name"] = "incremental-dataset"
    out["dataset"] = kube.resource(DATASETS).create(namespace, dataset)
    out["job"] = kube.resource(INCREMENTAL_LEARNING_JOBS).create(namespace, job)
    kube.resource(SECRETS).create(namespace, secret_body("s3-secret", "s3.amazonaws.com"))
    kube.resource(SECRETS).create(
        namespace, secret_body("s3-plain", "minio.local:9000", use_https="0")
    )
    return out
