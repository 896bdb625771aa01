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
    # Sedna's short names are kept; Dataset and Model get one too.
    for f in sorted((sedna_reference / "crds").glob("*.yaml")):
        for doc in yaml.load_all(f.read_text(), Loader=_LOADER):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                name = doc["metadata"]["name"]
                mine = next(c for c in crd_manifests() if c["metadata"]["name"] == name)
                theirs_short = set(doc["spec"]["names"].get("shortNames") or ())
                assert theirs_short <= set(mine["spec"]["names"]["shortNames"])


def _no_descriptions(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: _no_descriptions(v)
            for k, v in node.items()
            if not (k == "description" and isinstance(v, str))
        }
    if isinstance(node, list):
        return [_no_descriptions(x) for x in node]
    return node


def test_crds_carry_sednas_schemas_printer_columns_and_short_names(sedna_reference: Path) -> None:
    theirs = {}
    for f in sorted((sedna_reference / "crds").glob("*.yaml")):
        for doc in yaml.load_all(f.read_text(), Loader=_LOADER):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                (v,) = doc["spec"]["versions"]
                theirs[doc["spec"]["names"]["kind"]] = v["schema"]["openAPIV3Schema"]
    for crd in crd_manifests():
        assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
        (version,) = crd["spec"]["versions"]
        kind = crd["spec"]["names"]["kind"]
        assert version["schema"]["openAPIV3Schema"] == _no_descriptions(theirs[kind]), kind
        columns = version["additionalPrinterColumns"]
        assert columns[-1] == {
            "name": "Age",
            "type": "date",
            "jsonPath": ".metadata.creationTimestamp",
        }
        assert len(columns) >= 3, kind
        for col in columns:
            assert set(col) == {"name", "type", "jsonPath"}
        assert crd["spec"]["names"]["shortNames"], kind
    shorts = [s for c in crd_manifests() for s in c["spec"]["names"]["shortNames"]]
    assert len(shorts) == len(set(shorts)) == 11
    assert "ds" not in shorts  # DaemonSet's


def test_table_agrees_with_the_runtime() -> None:
    assert {k.plural: k.kind for k in SEDNA_KINDS} == RUNTIME_KINDS


def test_kind_for() -> None:
    il = kind_for(f"{GROUP}/{VERSION}", "IncrementalLearningJob")
    assert il is not None and il.short_names == ("il",)
    assert kind_for("sedna.io/v1alpha2", "IncrementalLearningJob") is None
    assert kind_for(f"{GROUP}/{VERSION}", "Pod") is None
