"""A job's Model or Dataset the cache has not seen yet is read from the API, not reported
missing; an API that fails is retried, not taken for absence."""

from __future__ import annotations

from pathlib import Path

import kubernetes
import pytest

from sedna.embedded.apiserver import APIServer
from sedna.runtime import DATASETS, KubeClient, SharedInformerFactory, StageRetry, read_input

from .helpers import sample_dataset


def test_a_dataset_applied_with_its_job_is_found_before_the_cache_has_it(
    api_client: kubernetes.client.ApiClient, namespace: str, sample_dir: Path
) -> None:
    kube = KubeClient(api_client)
    kube.resource(DATASETS).create(namespace, sample_dataset(sample_dir))
    datasets = SharedInformerFactory(kube, namespace=namespace).informer(DATASETS)  # not started
    found = read_input(datasets, namespace, "incremental-dataset", "Dataset")
    assert found is not None and found["spec"]["nodeName"]
    assert read_input(datasets, namespace, "absent", "Dataset") is None  # absent: blocked as before


def test_an_api_error_on_the_read_is_retried_not_reported_missing(
    api_client: kubernetes.client.ApiClient,
    namespace: str,
    embedded_apiserver: APIServer,
) -> None:
    datasets = SharedInformerFactory(KubeClient(api_client), namespace=namespace).informer(DATASETS)
    embedded_apiserver.faults.fail(500, verbs=("get",), resources=("datasets",), count=1)
    with pytest.raises(StageRetry) as caught:
        read_input(datasets, namespace, "incremental-dataset", "Dataset ns/incremental-dataset")
    assert caught.value.reason == "InputReadFailed"
    assert "cannot read Dataset ns/incremental-dataset" in caught.value.message
