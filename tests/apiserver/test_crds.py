"""Sedna's CRDs load as they are, their samples round-trip, and CRDs created through
the API serve their kind at once."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml
from support.outside import SAMPLES_DIR

from .helpers import call, eventually, expect_status

ApiClient = kubernetes.client.ApiClient
SEDNA_PLURALS = {
    "datasets": "Dataset",
    "featureextractionservices": "FeatureExtractionService",
    "federatedlearningjobs": "FederatedLearningJob",
    "incrementallearningjobs": "IncrementalLearningJob",
    "jointinferenceservices": "JointInferenceService",
    "lifelonglearningjobs": "LifelongLearningJob",
    "models": "Model",
    "objectsearchservices": "ObjectSearchService",
    "objecttrackingservices": "ObjectTrackingService",
    "reidjobs": "ReidJob",
    "videoanalyticsjobs": "VideoAnalyticsJob",
}


def _sample_docs(ref: Path) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for f in sorted(ref.glob("*.yaml")):
        for i, doc in enumerate(yaml.safe_load_all(f.read_text())):
            if isinstance(doc, dict):
                out.append((f"{f.name}#{i}", doc))
    return out


def test_eleven_sedna_crds_in_discovery(api_client: ApiClient) -> None:
    _, doc = call(api_client, "GET", "/apis/sedna.io/v1alpha1")
    served = {r["name"]: r for r in doc["resources"]}
    for plural, kind in SEDNA_PLURALS.items():
        assert served[plural]["kind"] == kind and served[plural]["namespaced"] is True
        assert f"{plural}/status" in served
    assert "il" in served["incrementallearningjobs"]["shortNames"]


def test_crds_readable_through_api(api_client: ApiClient) -> None:
    ext = kubernetes.client.ApiextensionsV1Api(api_client)
    names = {c.metadata.name for c in ext.list_custom_resource_definition().items}
    assert {f"{p}.sedna.io" for p in SEDNA_PLURALS} <= names
    crd = ext.read_custom_resource_definition("incrementallearningjobs.sedna.io")
    assert crd.spec.names.short_names == ["il"]
    assert any(c.type == "Established" and c.status == "True" for c in crd.status.conditions)


_SAMPLE_FILES = sorted(p.name for p in SAMPLES_DIR.glob("*.yaml"))


def test_samples_present(sample_dir: Path) -> None:
    assert len(_sample_docs(sample_dir)) >= 10


@pytest.mark.parametrize("sample", _SAMPLE_FILES)
def test_sample_round_trips(
    api_client: ApiClient, namespace: str, sample_dir: Path, sample: str
) -> None:
    docs = [(lbl, d) for lbl, d in _sample_docs(sample_dir) if lbl.startswith(sample + "#")]
    assert docs
    co = kubernetes.client.CustomObjectsApi(api_client)
    for label, doc in docs:
        group, version = doc["apiVersion"].split("/")
        plural = {k: p for p, k in SEDNA_PLURALS.items()}[doc["kind"]]
        body = dict(doc, metadata={k: v for k, v in doc["metadata"].items() if k != "namespace"})
        created = co.create_namespaced_custom_object(group, version, namespace, plural, body)
        got = co.get_namespaced_custom_object(
            group, version, namespace, plural, created["metadata"]["name"]
        )
        assert got["spec"] == doc["spec"], label
        assert got["kind"] == doc["kind"], label


def _crd(
    plural: str, kind: str, scope: str = "Namespaced", group: str = "example.com"
) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {
                "plural": plural,
                "singular": kind.lower(),
                "kind": kind,
                "shortNames": [plural[:3] + "x"],
            },
            "scope": scope,
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                    "subresources": {"status": {}},
                }
            ],
        },
    }


def test_create_crd_through_api_then_serve_kind(api_client: ApiClient, namespace: str) -> None:
    plural = f"widgets{uuid.uuid4().hex[:6]}"
    status, _ = call(
        api_client,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        _crd(plural, "Widget"),
    )
    assert status == 201
    path = f"/apis/example.com/v1/namespaces/{namespace}/{plural}"
    eventually(lambda: call(api_client, "GET", path)[0] == 200)
    status, w = call(
        api_client,
        "POST",
        path,
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {"size": 3},
        },
    )
    assert status == 201 and w["spec"] == {"size": 3}
    _, doc = call(api_client, "GET", "/apis/example.com/v1")
    assert plural in [r["name"] for r in doc["resources"]]
    call(
        api_client,
        "DELETE",
        f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{plural}.example.com",
    )
    eventually(lambda: call(api_client, "GET", path)[0] == 404)


def test_cluster_scoped_crd(api_client: ApiClient) -> None:
    plural = f"gadgets{uuid.uuid4().hex[:6]}"
    call(
        api_client,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        _crd(plural, "Gadget", "Cluster"),
    )
    path = f"/apis/example.com/v1/{plural}"
    eventually(lambda: call(api_client, "GET", path)[0] == 200)
    status, g = call(api_client, "POST", path, {"metadata": {"name": "g"}, "spec": {}})
    assert status == 201 and "namespace" not in g["metadata"]
    expect_status(api_client, 404, "GET", f"/apis/example.com/v1/namespaces/default/{plural}")
    co = kubernetes.client.CustomObjectsApi(api_client)
    assert co.get_cluster_custom_object("example.com", "v1", plural, "g")["metadata"]["name"] == "g"


def test_kind_mismatch_is_400(api_client: ApiClient, namespace: str) -> None:
    expect_status(
        api_client,
        400,
        "POST",
        f"/apis/sedna.io/v1alpha1/namespaces/{namespace}/models",
        {"kind": "Dataset", "metadata": {"name": "x"}, "spec": {}},
    )


@pytest.mark.parametrize("field", ["group", "names"])
def test_invalid_crd_is_422(api_client: ApiClient, field: str) -> None:
    crd = _crd("brokens", "Broken")
    del crd["spec"][field]
    expect_status(
        api_client, 422, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd
    )
