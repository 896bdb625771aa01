"""Create-if-absent of YAML manifests through the API, for `embedded.apply`.

Embedded mode seeds its store with the example resources on the first start and
must not undo what the user changed since (a restart keeps every object), so an
object that exists is left alone: this is `kubectl create` that tolerates
"already exists", not `kubectl apply`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sedna.embedded import kube_yaml
from sedna.embedded.crds import GROUP, SEDNA_KINDS, VERSION
from sedna.runtime.kube import (
    CONFIGMAPS,
    NAMESPACES,
    PODS,
    SECRETS,
    SERVICES,
    ApiError,
    KubeClient,
    NotFound,
    Resource,
)

_BUILTIN: dict[tuple[str, str], Resource] = {
    (r.api_version, r.kind): r for r in (NAMESPACES, SECRETS, CONFIGMAPS, SERVICES, PODS)
}
_SEDNA: dict[tuple[str, str], Resource] = {
    (f"{GROUP}/{VERSION}", k.kind): Resource(GROUP, VERSION, k.plural, k.kind) for k in SEDNA_KINDS
}


class ManifestError(Exception):
    """A manifest that cannot be applied; the message names the file and the object."""


@dataclass(frozen=True)
class Manifest:
    source: str
    doc: dict[str, Any]

    @property
    def label(self) -> str:
        meta = self.doc.get("metadata") or {}
        ns = meta.get("namespace")
        name = meta.get("name") or "?"
        return f"{self.doc.get('kind')} {ns + '/' if ns else ''}{name}"


def manifest_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Each path as a file, or the sorted *.yaml / *.yml files of a directory."""
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            yield from sorted(f for f in p.iterdir() if f.suffix in (".yaml", ".yml"))
        elif p.is_file():
            yield p
        else:
            raise ManifestError(f"{raw}: no such file or directory")


def load_manifests(paths: Iterable[str | Path]) -> list[Manifest]:
    out: list[Manifest] = []
    for f in manifest_files(paths):
        try:
            docs = list(kube_yaml.load_all(f.read_text(encoding="utf-8")))
        except (OSError, yaml.YAMLError) as exc:
            raise ManifestError(f"{f}: cannot read: {exc}") from None
        for doc in docs:
            if doc is None:
                continue
            if not isinstance(doc, dict) or not doc.get("kind") or not doc.get("apiVersion"):
                raise ManifestError(f"{f}: every document needs apiVersion and kind")
            if not isinstance(doc.get("metadata") or {}, dict):
                raise ManifestError(f"{f}: {doc['kind']}: metadata: expected a mapping")
            out.append(Manifest(str(f), doc))
    return out


def resource_for(doc: Mapping[str, Any]) -> Resource | None:
    key = (str(doc.get("apiVersion")), str(doc.get("kind")))
    return _SEDNA.get(key) or _BUILTIN.get(key)


def create_if_absent(
    kube: KubeClient, manifest: Manifest, default_namespace: str = "default"
) -> bool:
    """Create the object unless one of that name exists; True when it was created."""
    res = resource_for(manifest.doc)
    if res is None:
        raise ManifestError(
            f"{manifest.source}: {manifest.label}: kind not supported by embedded.apply "
            "(Sedna kinds, Namespace, Secret, ConfigMap, Service, Pod)"
        )
    meta = dict(manifest.doc.get("metadata") or {})
    name = str(meta.get("name") or "")
    if not name:
        raise ManifestError(f"{manifest.source}: {manifest.label}: metadata.name is required")
    ns = str(meta.get("namespace") or default_namespace) if res.namespaced else None
    client = kube.resource(res)
    try:
        client.get(ns, name)
        return False
    except NotFound:
        pass
    body = dict(manifest.doc)
    if ns is not None:
        body["metadata"] = {**meta, "namespace": ns}
    try:
        client.create(ns, body)
    except ApiError as exc:
        if exc.status == 409:
            return False
        raise ManifestError(f"{manifest.source}: {manifest.label}: {exc}") from exc
    return True
