"""Refresh sedna/embedded/crd_schemas.json.gz from Sedna's CRDs (its build/crds/ folder).

    python scripts/update_crd_schemas.py <folder with sedna.io_*.yaml>

Keeps each kind's openAPIV3Schema without `description` texts (as controller-gen's
crd:maxDescLen=0 does): the schemas stay exact while the CRDs shrink from 11 MB to
3.5 MB, small enough for `kubectl apply --server-side` and a Helm release.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

import yaml

OUT = Path(__file__).resolve().parents[1] / "sedna" / "embedded" / "crd_schemas.json.gz"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def strip_descriptions(node: Any) -> Any:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            # `description` is a text everywhere except as a property named so.
            if key == "description" and not isinstance(value, dict):
                continue
            out[key] = (
                strip_descriptions(value)
                if key != "properties"
                else {k: strip_descriptions(v) for k, v in value.items()}
            )
        return out
    if isinstance(node, list):
        return [strip_descriptions(x) for x in node]
    return node


def main(folder: str) -> int:
    schemas: dict[str, Any] = {}
    for f in sorted(Path(folder).glob("*.yaml")):
        for doc in yaml.load_all(f.read_text(encoding="utf-8"), Loader=_LOADER):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            (version,) = doc["spec"]["versions"]
            schema = version["schema"]["openAPIV3Schema"]
            schemas[doc["spec"]["names"]["kind"]] = strip_descriptions(schema)
    data = json.dumps(schemas, sort_keys=True, separators=(",", ":")).encode()
    OUT.write_bytes(gzip.compress(data, mtime=0))
    print(f"{OUT.name}: {len(schemas)} schemas, {len(data)} bytes, {OUT.stat().st_size} gzipped")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
