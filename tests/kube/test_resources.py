"""Resource coordinates: paths and the table of Sedna's CRDs."""

from __future__ import annotations

import pytest
import yaml
from support.outside import CRDS_DIR

from sedna.runtime.kube import (
    DEPLOYMENTS,
    HPAS,
    INCREMENTAL_LEARNING_JOBS,
    LEASES,
    NODES,
    PODS,
    SEDNA_KINDS,
    sedna_resource,
)


def test_paths() -> None:
    assert PODS.api_version == "v1"
    assert PODS.path() == "/api/v1/pods"
    assert PODS.path("ns") == "/api/v1/namespaces/ns/pods"
    assert PODS.path("ns", "p", "status") == "/api/v1/namespaces/ns/pods/p/status"
    assert NODES.path("ignored", "n1") == "/api/v1/nodes/n1"
    assert DEPLOYMENTS.path("ns", "d") == "/apis/apps/v1/namespaces/ns/deployments/d"
    assert LEASES.api_version == "coordination.k8s.io/v1"
    assert HPAS.path("ns") == "/apis/autoscaling/v2/namespaces/ns/horizontalpodautoscalers"
    assert (
        INCREMENTAL_LEARNING_JOBS.path("ns", "j", "status")
        == "/apis/sedna.io/v1alpha1/namespaces/ns/incrementallearningjobs/j/status"
    )
    # A hostile name cannot escape its path segment.
    assert PODS.path("ns", "a/../b") == "/api/v1/namespaces/ns/pods/a%2F..%2Fb"
    with pytest.raises(ValueError):
        PODS.path("ns", None, "status")


def test_sedna_table_matches_the_crds() -> None:
    found: dict[str, str] = {}
    for f in sorted(CRDS_DIR.glob("*.yaml")):
        for doc in yaml.load_all(
            f.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        ):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                spec = doc["spec"]
                assert spec["group"] == "sedna.io"
                assert spec["scope"] == "Namespaced"
                found[spec["names"]["plural"]] = spec["names"]["kind"]
                assert any(v["name"] == "v1alpha1" for v in spec["versions"])
    assert found == SEDNA_KINDS
    assert len(found) == 11
    for plural, kind in found.items():
        res = sedna_resource(plural)
        assert (res.group, res.version, res.kind, res.namespaced) == (
            "sedna.io",
            "v1alpha1",
            kind,
            True,
        )


def test_unknown_sedna_plural_is_named() -> None:
    with pytest.raises(ValueError, match="incrementallearningjob'"):
        sedna_resource("incrementallearningjob")
