"""Applying manifests as `kubectl apply` would, in order, to an API server of a test's own."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import kubernetes
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ConflictError

from sedna.embedded import kube_yaml
from sedna.embedded.apiserver import APIServer
from sedna.testing import api_client_for

PROJECT = Path(__file__).resolve().parents[2]
HELM_CANDIDATES = (PROJECT / ".cache" / "helm" / "helm",)


def helm_binary() -> str | None:
    found = shutil.which("helm")
    if found:
        return found
    return next((str(p) for p in HELM_CANDIDATES if p.exists()), None)


def docs_of(text: str) -> list[dict[str, Any]]:
    return [dict(d) for d in kube_yaml.load_all(text) if d]


def docs_in(*paths: Path) -> list[dict[str, Any]]:
    """Every document of the files (a folder: its .yaml files by name), in order."""
    out: list[dict[str, Any]] = []
    for path in paths:
        files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
        for f in files:
            out.extend(docs_of(f.read_text(encoding="utf-8")))
    return out


@contextmanager
def fresh_server() -> Iterator[kubernetes.client.ApiClient]:
    """A new, empty API server (schema validation on) and a client for it."""
    srv = APIServer("127.0.0.1", 0)
    srv.start()
    client = api_client_for(srv)
    try:
        yield client
    finally:
        client.close()
        srv.stop()


def apply_in_order(
    client: kubernetes.client.ApiClient, docs: Iterable[Mapping[str, Any]]
) -> list[str]:
    """Create (or, if there, replace) each object in turn as kubectl apply does.

    The first refusal fails the caller.

    Discovery is re-read after a CRD, so the custom resources of a CRD applied earlier
    in the same sequence are found (kubectl does the same between files).
    Returns `Kind/namespace/name` of every object, for the caller to compare.
    """
    dyn = DynamicClient(client)
    created = []
    for doc in docs:
        api = dyn.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        meta = doc["metadata"]
        ns = meta.get("namespace") if api.namespaced else None
        body = json.loads(json.dumps(doc))
        try:
            api.create(body=body, namespace=ns)
        except ConflictError:  # kubectl apply: an object already there is configured
            current = api.get(name=meta["name"], namespace=ns)
            body["metadata"]["resourceVersion"] = current.metadata.resourceVersion
            api.replace(body=body, namespace=ns)
        if doc["kind"] == "CustomResourceDefinition":
            dyn.resources.invalidate_cache()
        created.append(f"{doc['kind']}/{ns or ''}/{meta['name']}")
    return created


def read_back(client: kubernetes.client.ApiClient, doc: Mapping[str, Any]) -> dict[str, Any]:
    dyn = DynamicClient(client)
    api = dyn.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
    meta = doc["metadata"]
    ns = meta.get("namespace") if api.namespaced else None
    return dict(api.get(name=meta["name"], namespace=ns).to_dict())


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)
