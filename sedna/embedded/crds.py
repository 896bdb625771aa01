"""The project's own CustomResourceDefinitions for Sedna's eleven kinds, built from a table.

Embedded mode installs these so that any Sedna resource can be applied before its
feature plugin exists. They are generated rather than copied from Sedna: names,
short names, scope and the status subresource match Sedna's CRDs (a test keeps them
in sync), while the schema is deliberately permissive (`x-kubernetes-preserve-unknown-fields`)
because validation of a job's fields is the feature plugin's job, with messages that
name the field, and a strict schema here would drift from Sedna's with every release.

`python -m sedna.embedded.crds` prints them as one multi-document YAML, for a cluster
that has no Sedna CRDs yet (Sedna's own `build/crds/` are the better choice there).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

GROUP = "sedna.io"
VERSION = "v1alpha1"


@dataclass(frozen=True)
class SednaKind:
    kind: str
    plural: str
    short_names: tuple[str, ...] = ()
    # Printer columns only where kubectl output gains something a newcomer looks for.
    columns: tuple[tuple[str, str, str], ...] = ()  # (name, type, jsonPath)

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def name(self) -> str:
        return f"{self.plural}.{GROUP}"


_AGE = ("Age", "date", ".metadata.creationTimestamp")
_JOB_COLUMNS = (
    ("Stage", "string", ".status.conditions[-1:].stage"),
    ("Condition", "string", ".status.conditions[-1:].type"),
    _AGE,
)

SEDNA_KINDS: tuple[SednaKind, ...] = (
    SednaKind("Dataset", "datasets", (), (("Node", "string", ".spec.nodeName"), _AGE)),
    SednaKind("FeatureExtractionService", "featureextractionservices", ("fe",)),
    SednaKind("FederatedLearningJob", "federatedlearningjobs", ("fl",)),
    SednaKind("IncrementalLearningJob", "incrementallearningjobs", ("il",), _JOB_COLUMNS),
    SednaKind("JointInferenceService", "jointinferenceservices", ("ji",)),
    SednaKind(
        "LifelongLearningJob",
        "lifelonglearningjobs",
        ("ll",),
        (
            *_JOB_COLUMNS[:2],
            ("Models", "integer", ".status.knowledgeBase.AIModels.numberOfAIModels"),
            _AGE,
        ),
    ),
    SednaKind("Model", "models", (), (("Format", "string", ".spec.format"), _AGE)),
    SednaKind("ObjectSearchService", "objectsearchservices", ("objs",)),
    SednaKind("ObjectTrackingService", "objecttrackingservices", ("objt",)),
    SednaKind("ReidJob", "reidjobs", ("reid",)),
    SednaKind("VideoAnalyticsJob", "videoanalyticsjobs", ("va",)),
)


def crd_manifest(k: SednaKind) -> dict[str, Any]:
    """One apiextensions.k8s.io/v1 CRD for a Sedna kind."""
    names: dict[str, Any] = {
        "kind": k.kind,
        "listKind": f"{k.kind}List",
        "plural": k.plural,
        "singular": k.singular,
    }
    if k.short_names:
        names["shortNames"] = list(k.short_names)
    version: dict[str, Any] = {
        "name": VERSION,
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
    if k.columns:
        version["additionalPrinterColumns"] = [
            {"name": n, "type": t, "jsonPath": p} for n, t, p in k.columns
        ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": k.name, "labels": {"app.kubernetes.io/part-of": "sedna-gm"}},
        "spec": {"group": GROUP, "names": names, "scope": "Namespaced", "versions": [version]},
    }


def crd_manifests() -> Iterator[dict[str, Any]]:
    """Every Sedna CRD, in a stable order."""
    for k in SEDNA_KINDS:
        yield crd_manifest(k)


def kind_for(api_version: str, kind: str) -> SednaKind | None:
    """The table row for a manifest's apiVersion/kind, None for anything not Sedna's."""
    if api_version != f"{GROUP}/{VERSION}":
        return None
    return next((k for k in SEDNA_KINDS if k.kind == kind), None)


def main() -> int:
    yaml.safe_dump_all(list(crd_manifests()), sys.stdout, sort_keys=False)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
