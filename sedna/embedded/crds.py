"""The project's CustomResourceDefinitions for Sedna's eleven kinds: Sedna's schemas, our columns.

Embedded mode installs these, and `sedna-gm crds` prints them for a real cluster
(`config/crds/` and the Helm chart's `crds/` hold that output; a test keeps them equal).
Names, scope and the status subresource are Sedna's; the `openAPIV3Schema` of each kind
is Sedna's own, without its description texts (`crd_schemas.json.gz`, refreshed by
`scripts/update_crd_schemas.py`), so a misspelt or mistyped field is refused here as on
Sedna. Beyond Sedna's CRDs: printer columns for every kind (stage and condition of the
staged jobs, phase and active/failed counts of the workloads, node of a dataset) and a
short name for every kind (Sedna gives none to Dataset and Model; `ds` would shadow
DaemonSet's, hence `dset`).
"""

from __future__ import annotations

import copy
import functools
import gzip
import json
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
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
_STAGE = ("Stage", "string", ".status.conditions[-1:].stage")
_CONDITION = ("Condition", "string", ".status.conditions[-1:].type")
_PHASE = ("Phase", "string", ".status.phase")
_ACTIVE = ("Active", "integer", ".status.active")
_FAILED = ("Failed", "integer", ".status.failed")
_STAGED = (_STAGE, _CONDITION, _AGE)
_SERVICE = (_CONDITION, _ACTIVE, _FAILED, _AGE)
_PHASED = (_PHASE, _CONDITION, _ACTIVE, _FAILED, _AGE)

SEDNA_KINDS: tuple[SednaKind, ...] = (
    SednaKind(
        "Dataset",
        "datasets",
        ("dset",),
        (
            ("Node", "string", ".spec.nodeName"),
            ("Format", "string", ".spec.format"),
            ("Samples", "integer", ".status.numberOfSamples"),
            _AGE,
        ),
    ),
    SednaKind("FeatureExtractionService", "featureextractionservices", ("fe",), _SERVICE),
    SednaKind("FederatedLearningJob", "federatedlearningjobs", ("fl",), _PHASED),
    SednaKind("IncrementalLearningJob", "incrementallearningjobs", ("il",), _STAGED),
    SednaKind("JointInferenceService", "jointinferenceservices", ("ji",), _SERVICE),
    SednaKind(
        "LifelongLearningJob",
        "lifelonglearningjobs",
        ("ll",),
        (
            _STAGE,
            _CONDITION,
            ("Models", "integer", ".status.knowledgeBase.AIModels.numberOfAIModels"),
            _AGE,
        ),
    ),
    SednaKind(
        "Model",
        "models",
        ("mdl",),
        (("Format", "string", ".spec.format"), ("URL", "string", ".spec.url"), _AGE),
    ),
    SednaKind("ObjectSearchService", "objectsearchservices", ("objs",), _SERVICE),
    SednaKind("ObjectTrackingService", "objecttrackingservices", ("objt",), _SERVICE),
    SednaKind("ReidJob", "reidjobs", ("reid",), _PHASED),
    SednaKind("VideoAnalyticsJob", "videoanalyticsjobs", ("va",), _PHASED),
)

_SCHEMAS_FILE = "crd_schemas.json.gz"


@functools.cache
def _schemas() -> dict[str, Any]:
    data = resources.files("sedna.embedded").joinpath(_SCHEMAS_FILE).read_bytes()
    loaded: dict[str, Any] = json.loads(gzip.decompress(data))
    return loaded


def schema_for(kind: str) -> dict[str, Any]:
    """Sedna's openAPIV3Schema for a kind (a fresh copy: callers may change it)."""
    return copy.deepcopy(_schemas()[kind])


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
        "schema": {"openAPIV3Schema": schema_for(k.kind)},
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


def file_name(crd: Mapping[str, Any]) -> str:
    """`sedna.io_<plural>.yaml`, the file names of Sedna's build/crds/."""
    spec = crd["spec"]
    return f"{spec['group']}_{spec['names']['plural']}.yaml"


def dump(crd: Mapping[str, Any]) -> str:
    """One CRD as the YAML document `sedna-gm crds` prints and config/crds/ holds."""
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return "---\n" + yaml.dump(crd, Dumper=dumper, sort_keys=False, width=100)


def write_dir(folder: Path) -> list[Path]:
    """Write one file per CRD into `folder` (config/crds/, the chart's crds/)."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for crd in crd_manifests():
        path = folder / file_name(crd)
        path.write_text(dump(crd), encoding="utf-8")
        written.append(path)
    return written


def main() -> int:
    for crd in crd_manifests():
        sys.stdout.write(dump(crd))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
