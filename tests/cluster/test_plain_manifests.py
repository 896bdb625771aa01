"""The plain manifests, applied in the README's order to an empty API server, all land."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sedna import __version__
from sedna.embedded.apiserver import APIServer
from sedna.embedded.crds import crd_manifests, dump, file_name
from tests.cluster.helpers import PROJECT, apply_in_order, docs_in, fresh_server, read_back, run

CONFIG = PROJECT / "config"
README = PROJECT / "README.md"


def readme_apply_sequence() -> list[list[str]]:
    """The `kubectl apply` lines of the README's plain-manifest install, in order."""
    section = README.read_text().split("### Plain manifests", 1)[1].split("\n## ", 1)[0]
    lines = re.findall(r"^kubectl apply (.+)$", section, re.M)
    assert lines, "no kubectl apply in the README's plain-manifest section"
    return [re.findall(r"-f (\S+)", line) for line in lines]


def test_the_readme_sequence_creates_every_object() -> None:
    files = [CONFIG.parent / f for line in readme_apply_sequence() for f in line]
    assert files[0] == CONFIG / "crds/"
    docs = docs_in(*files)
    with fresh_server() as client:
        created = apply_in_order(client, docs)
        for doc in docs:
            assert read_back(client, doc)["metadata"]["name"] == doc["metadata"]["name"]
    kinds = {c.split("/")[0] for c in created}
    assert {
        "CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole",
        "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap", "Deployment",
        "PodDisruptionBudget", "Service",
    } <= kinds  # fmt: skip
    assert len(created) == len(docs)


def test_rbac_then_deploy_applies_on_an_empty_cluster() -> None:
    """`kubectl apply -f config/rbac.yaml -f config/deploy/sedna-gm.yaml`: the namespace first."""
    docs = docs_in(CONFIG / "rbac.yaml", CONFIG / "deploy" / "sedna-gm.yaml")
    assert docs[0] == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "sedna"}}
    with fresh_server() as client:
        apply_in_order(client, docs)


def test_config_crds_are_what_sedna_gm_crds_prints() -> None:
    on_disk = {p.name: p.read_text() for p in (CONFIG / "crds").glob("*.yaml")}
    assert on_disk == {file_name(c): dump(c) for c in crd_manifests()}
    printed = run(sys.executable, "-m", "sedna.cli", "crds").stdout
    assert printed == "".join(dump(c) for c in crd_manifests())


@pytest.mark.parametrize("config", ["gm.cluster.yaml"])
def test_config_rbac_is_generated_from_the_enabled_features(config: str) -> None:
    proc = run(sys.executable, "-m", "sedna.cli", "rbac", "--config", str(CONFIG / config))
    assert proc.returncode == 0, proc.stderr
    assert (CONFIG / "rbac.yaml").read_text() == proc.stdout, (
        "config/rbac.yaml is stale: sedna-gm rbac --config config/gm.cluster.yaml "
        "> config/rbac.yaml"
    )


def test_rbac_follows_the_config() -> None:
    """A configured namespace confines the grants; a disabled feature takes its grants away."""
    from sedna.plugins import load_plugins
    from sedna.rbac import rbac_manifests
    from sedna.runtime.config import GMConfig

    cfg = GMConfig.model_validate(
        {
            "namespace": "ai",
            "websocket": {"auth": "none"},
            "features": {"dataset": {"enabled": False}},
        }
    )
    features = [f.feature for f in load_plugins(cfg, source="test").features]
    docs = rbac_manifests(cfg, features)
    (cluster,) = [d for d in docs if d["kind"] == "ClusterRole"]
    assert cluster["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "watch"]},
        {
            "apiGroups": ["apiextensions.k8s.io"],
            "resources": ["customresourcedefinitions"],
            "verbs": ["list"],
        },
    ]
    (role,) = [d for d in docs if d["kind"] == "Role"]
    assert role["metadata"]["namespace"] == "ai"
    resources = {r for rule in role["rules"] for r in rule["resources"]}
    assert "secrets" in resources and "datasets/status" not in resources
    assert "leases" not in resources  # leader election is off


@pytest.mark.parametrize("namespace", ["", "ai"])
def test_node_address_binding_grants_get_on_nodes(namespace: str) -> None:
    """websocket.nodeAddressBinding reads the connecting LC's Node by name (GET
    nodes/<name>): the ClusterRole has `get` on nodes then, and only then."""
    from sedna.plugins import load_plugins
    from sedna.rbac import grants, rbac_manifests
    from sedna.runtime.config import GMConfig

    def node_verbs(binding: bool) -> list[list[str]]:
        cfg = GMConfig.model_validate(
            {"namespace": namespace, "websocket": {"auth": "node", "nodeAddressBinding": binding}}
        )
        features = [f.feature for f in load_plugins(cfg, source="test").features]
        allowed = any(g.allows("", "nodes", "get", None) for g in grants(cfg, features))
        assert allowed == binding
        (cluster,) = [d for d in rbac_manifests(cfg, features) if d["kind"] == "ClusterRole"]
        return [r["verbs"] for r in cluster["rules"] if "nodes" in r["resources"]]

    assert node_verbs(False) == [["list", "watch"]]
    assert node_verbs(True) == [["get", "list", "watch"]]


def test_node_address_binding_rbac_from_the_cli(tmp_path: Path) -> None:
    gm = tmp_path / "nab.yaml"
    gm.write_text("websocket:\n  auth: node\n  nodeAddressBinding: true\n")
    proc = run(sys.executable, "-m", "sedna.cli", "rbac", "--config", str(gm))
    assert proc.returncode == 0, proc.stderr
    (cluster,) = [d for d in yaml.safe_load_all(proc.stdout) if d and d["kind"] == "ClusterRole"]
    rules = [r for r in cluster["rules"] if "nodes" in r["resources"]]
    assert rules == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}]


def test_deploy_configmap_is_gm_cluster_yaml_and_the_image_is_the_built_tag() -> None:
    docs = docs_in(CONFIG / "deploy" / "sedna-gm.yaml")
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap"]
    assert yaml.safe_load(cm["data"]["gm.yaml"]) == yaml.safe_load(
        (CONFIG / "gm.cluster.yaml").read_text()
    )
    (deploy,) = [d for d in docs if d["kind"] == "Deployment"]
    image = deploy["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == f"sedna-gm:{__version__}"
    dockerfile = (PROJECT / "Dockerfile").read_text()
    assert f"docker build -t {image} ." in dockerfile
    assert f"docker build -t {image} ." in README.read_text()
    chart = yaml.safe_load((CONFIG / "helm" / "sedna-gm" / "Chart.yaml").read_text())
    assert chart["appVersion"] == __version__


def test_the_base_image_is_pinned_by_version_and_digest() -> None:
    """A moving tag (python:3.11-slim) rebuilds on whatever Python and Debian it names
    that day; the image is pinned to a full version, on bookworm, and to a digest."""
    dockerfile = (PROJECT / "Dockerfile").read_text()
    (base,) = [line.split()[1] for line in dockerfile.splitlines() if line.startswith("FROM ")]
    pinned = re.fullmatch(r"python:3\.11\.(\d+)-slim-bookworm@sha256:([0-9a-f]{64})", base)
    assert pinned, base


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_the_readme_sequence_with_kubectl(tmp_path: Path) -> None:
    """The README's lines through kubectl itself, in order. The in-process server has no
    server-side apply, so the CRD line runs as `kubectl create` (the same objects)."""
    section = README.read_text().split("### Plain manifests", 1)[1].split("```bash", 1)[1]
    block = section.split("```", 1)[0].replace("\\\n", " ")  # continuation lines joined
    lines = [ln for ln in block.splitlines() if ln.startswith("kubectl ")]
    assert len(lines) == 3, lines  # CRDs, the GM, the metrics token
    tokens = README.read_text().split("### LC tokens", 1)[1].split("```bash", 1)[1]
    (token_line,) = [
        ln.split("#")[0].strip()
        for ln in tokens.split("```", 1)[0].splitlines()
        if ln.startswith("sedna-gm token create")
    ]
    srv = APIServer("127.0.0.1", 0)
    srv.start()
    try:
        kubeconfig = tmp_path / "kubeconfig"
        srv.write_kubeconfig(kubeconfig)
        for line in lines:
            command = line.replace("apply --server-side", "create").replace(
                "kubectl ", f"kubectl --kubeconfig {shlex.quote(str(kubeconfig))} ", 1
            )
            proc = subprocess.run(
                ["bash", "-c", command],  # as typed: the token line's $(...) runs too
                capture_output=True, text=True, timeout=120, cwd=PROJECT,
            )  # fmt: skip
            assert proc.returncode == 0, f"{line}: {proc.stderr}"
        # the node token, with the operator's kubeconfig (here: $KUBECONFIG)
        proc = subprocess.run(
            [sys.executable, "-m", "sedna.cli", *shlex.split(token_line)[1:]],
            capture_output=True, text=True, timeout=120, cwd=PROJECT,
            env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        )  # fmt: skip
        assert proc.returncode == 0, f"{token_line}: {proc.stderr}"
        assert len(proc.stdout.strip()) >= 32  # the token, printed once
        proc = subprocess.run(
            ["kubectl", "--kubeconfig", str(kubeconfig), "get", "-n", "sedna",
             "deploy,svc,pdb,cm,secret,sa,role,rolebinding", "-o", "name"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        listed = proc.stdout.split()
        expected = (
            "deployment.apps/sedna-gm", "service/gm", "secret/sedna-lc-token-edge-node-1",
            "poddisruptionbudget.policy/sedna-gm", "configmap/sedna-gm-config",
            "secret/sedna-gm-metrics-token",
        )  # fmt: skip
        for name in expected:
            assert name in listed, proc.stdout + proc.stderr
    finally:
        srv.stop()
