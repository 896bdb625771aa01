"""The shipped deployment manifests hold a valid gm.yaml and apply to an API server."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml

from sedna.plugins import load_plugins
from sedna.runtime import (
    DEPLOYMENTS,
    NAMESPACES,
    SERVICES,
    AlreadyExists,
    KubeClient,
    Resource,
)
from sedna.runtime.config import load_config

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "config" / "deploy" / "sedna-gm.yaml"


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


@pytest.mark.parametrize("name", ["gm.yaml", "gm.cluster.yaml"])
def test_shipped_configs_validate_with_their_features(name: str) -> None:
    config = load_config(ROOT / "config" / name, {})
    loaded = load_plugins(config, source=name)
    assert {f.feature.name for f in loaded.features} >= {"incremental_learning", "dataset"}


def test_configmap_gm_yaml_is_valid(tmp_path: Path) -> None:
    (cm,) = [d for d in docs(DEPLOY) if d["kind"] == "ConfigMap"]
    path = tmp_path / "gm.yaml"
    path.write_text(cm["data"]["gm.yaml"])
    config = load_config(path, {})
    assert config.leaderElection.enabled
    assert config.websocket.auth == "node" and config.websocket.nodeTokenNamespace == "sedna"
    load_plugins(config, source="configmap gm.yaml")
    # The Deployment's probes and ports match what the GM serves.
    (deploy,) = [d for d in docs(DEPLOY) if d["kind"] == "Deployment"]
    container = deploy["spec"]["template"]["spec"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"websocket": config.websocket.port, "metrics": config.metrics.port}
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_manifests_apply(api_client: kubernetes.client.ApiClient) -> None:
    kube = KubeClient(api_client)
    kinds = {
        "Namespace": NAMESPACES,
        "ConfigMap": Resource("", "v1", "configmaps", "ConfigMap"),
        "Deployment": DEPLOYMENTS,
        "Service": SERVICES,
        "ServiceAccount": Resource("", "v1", "serviceaccounts", "ServiceAccount"),
    }
    created = []
    for doc in docs(DEPLOY) + docs(ROOT / "config" / "rbac.yaml"):
        res = kinds.get(doc["kind"])
        if res is None:
            continue  # RBAC kinds: the in-process server does not serve them
        with contextlib.suppress(AlreadyExists):  # the sedna namespace is shared in a session
            kube.resource(res).create(doc["metadata"].get("namespace"), doc)
        created.append(doc["kind"])
    assert {"Namespace", "ConfigMap", "Deployment", "Service", "ServiceAccount"} <= set(created)
