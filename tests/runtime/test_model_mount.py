"""A Model the cache has not seen yet is read from the server, not reported missing."""

from __future__ import annotations

import kubernetes
import pytest

from sedna.runtime import MODELS, KubeClient, SharedInformerFactory, Waiting, model_mount

OWNER = {
    "apiVersion": "sedna.io/v1alpha1",
    "kind": "JointInferenceService",
    "metadata": {"name": "ji", "uid": "u-1"},
}


def test_a_model_applied_with_its_service_is_found_before_the_cache_has_it(
    api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    """Regression: a Model and a service applied together (`kubectl apply -f dir/`) gave
    the service a ModelNotFound condition and Warning until the Model's cache caught up."""
    kube = KubeClient(api_client)
    kube.resource(MODELS).create(
        namespace, {"metadata": {"name": "m"}, "spec": {"url": "s3://b/m.pb", "format": "pb"}}
    )
    models = SharedInformerFactory(kube, namespace=namespace).informer(MODELS)  # not started
    owner = {**OWNER, "metadata": {**OWNER["metadata"], "namespace": namespace}}
    mount = model_mount(models, owner, "m", "spec.edgeWorker.model.name", "MODEL_URL")
    assert mount.url.url == "s3://b/m.pb"
    with pytest.raises(Waiting):
        model_mount(models, owner, "absent", "spec.edgeWorker.model.name", "MODEL_URL")
