"""The generated CRDs must stay in step with Sedna's own (names, scope, status)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from sedna.embedded.crds import GROUP, SEDNA_KINDS, VERSION, crd_manifests, kind_for
from sedna.runtime.kube import SEDNA_KINDS as RUNTIME_KINDS

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _essentials(crd: dict[str, Any]) -> dict[str, Any]:
    spec = crd["spec"]
    names = spec["names"]
    return {
        "name": crd["metadata"]["name"],
        "group": spec["group"],
        "kind": names["kind"],
        "listKind": names.get("listKind"),
        "plural": names["plural"],
        "singular": names.get("singular"),
        "shortNames": sorted(names.get("shortNames") or []),
        "scope": spec["scope"],
        "versions": [
            (v["name"], v["served"], v["storage"], sorted(v.get("subresources") or {}))
            for v in spec["versions"]
        ],
    }


def test_crds_match_sednas(sedna_reference: Path) -> None:
    theirs = {}
    for f in sorted((sedna_reference / "crds").glob("*.yaml")):
        # Sedna's CRDs are 11 MB of YAML: the C loader reads them in a second, not 14.
        for doc in yaml.load_all(f.read_text(), Loader=_LOADER):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                theirs[doc["metadata"]["name"]] = _essentials(doc)
    ours = {c["metadata"]["name"]: _essentials(c) for c in crd_manifests()}
    assert len(theirs) == 11
    assert ours == theirs


def test_crds_are_permissive_and_valid_v1() -> None:
    for crd in crd_manifests():
        assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
        (version,) = crd["spec"]["versions"]
        schema = version["schema"]["openAPIV3Schema"]
        assert schema == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        for col in version.get("additionalPrinterColumns", []):
            assert set(col) == {"name", "type", "jsonPath"}


def test_table_agrees_with_the_runtime() -> None:
    assert {k.plural: k.kind for k in SEDNA_KINDS} == RUNTIME_KINDS


def test_kind_for() -> None:
    il = kind_for(f"{GROUP}/{VERSION}", "IncrementalLearningJob")
    assert il is not None and il.short_names == ("il",)
    assert kind_for("sedna.io/v1alpha2", "IncrementalLearningJob") is None
    assert kind_for(f"{GROUP}/{VERSION}", "Pod") is None
