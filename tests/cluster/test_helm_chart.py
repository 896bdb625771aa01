"""The Helm chart: lint, render, apply to an empty API server, and run its gm.yaml."""

from __future__ import annotations

import base64
import copy
import json
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml
from websockets.exceptions import InvalidStatus

from sedna.embedded.crds import crd_manifests, dump, file_name
from sedna.runtime.kube import KubeClient
from sedna.tokens import issue_node_token
from tests.cluster.helpers import (
    PROJECT,
    apply_in_order,
    docs_of,
    fresh_server,
    helm_binary,
    read_back,
    run,
)
from tests.framework.test_cli_run import GM
from tests.messaging.helpers import FakeLC
from tests.support.waiting import wait_until

CHART = PROJECT / "config" / "helm" / "sedna-gm"
HELM = helm_binary()
METRICS = "sedna-gm-metrics-token"  # the chart's Secret for /metrics, beside any LC token
needs_helm = pytest.mark.skipif(HELM is None, reason="helm not installed (scripts/fetch_helm.sh)")


# A cluster with the Prometheus operator has these CRDs; the test server gets minimal ones.
def operator_crd(kind: str, plural: str) -> dict[str, Any]:
    crd = copy.deepcopy(SERVICE_MONITOR_CRD)
    crd["metadata"]["name"] = f"{plural}.monitoring.coreos.com"
    crd["spec"]["names"] = {"kind": kind, "plural": plural}
    return crd


SERVICE_MONITOR_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "servicemonitors.monitoring.coreos.com"},
    "spec": {
        "group": "monitoring.coreos.com",
        "names": {"kind": "ServiceMonitor", "plural": "servicemonitors"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}

EVERYTHING = (
    "--set", "serviceMonitor.enabled=true", "--set", "networkPolicy.enabled=true",
    "--set", "websocket.tls.secretName=gm-tls", "--set", "prometheusRule.enabled=true",
    "--set", "grafanaDashboard.enabled=true",
)  # fmt: skip


def template(*args: str) -> list[dict[str, Any]]:
    assert HELM is not None
    proc = run(HELM, "template", "sedna-gm", str(CHART), "-n", "sedna", "--include-crds", *args)
    assert proc.returncode == 0, proc.stderr
    return docs_of(proc.stdout)


@needs_helm
def test_helm_lint() -> None:
    assert HELM is not None
    proc = run(HELM, "lint", "--strict", str(CHART), *EVERYTHING)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_charts_files_are_the_shipped_rules_and_dashboard() -> None:
    for shipped in ("prometheus/sedna-gm-rules.yaml", "grafana/sedna-gm.json"):
        copy_in_chart = CHART / "files" / Path(shipped).name
        assert copy_in_chart.read_text() == (PROJECT / "config" / shipped).read_text(), shipped


def test_the_charts_crds_and_rbac_are_generated() -> None:
    on_disk = {p.name: p.read_text() for p in (CHART / "crds").glob("*.yaml")}
    assert on_disk == {file_name(c): dump(c) for c in crd_manifests()}
    proc = run(
        sys.executable, "-m", "sedna.cli", "rbac", "--helm",
        "--config", str(PROJECT / "config" / "gm.cluster.yaml"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (CHART / "templates" / "rbac.yaml").read_text() == proc.stdout


@needs_helm
def test_rendered_chart_applies_to_an_empty_cluster() -> None:
    docs = template(*EVERYTHING)
    kinds = [d["kind"] for d in docs]
    for kind in (
        "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
        "Role", "RoleBinding", "ConfigMap", "Service", "Deployment",
        "PodDisruptionBudget", "ServiceMonitor", "NetworkPolicy", "PrometheusRule",
    ):  # fmt: skip
        assert kind in kinds, kind
    # auth: node, the default: each node's token is issued; the one Secret is /metrics'
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "Secret"] == [
        "sedna-gm-metrics-token"
    ]
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "sedna"}}
    with fresh_server() as client:
        rules_crd = operator_crd("PrometheusRule", "prometheusrules")
        created = apply_in_order(client, [SERVICE_MONITOR_CRD, rules_crd, ns, *docs])
        for doc in docs:
            assert read_back(client, doc)["metadata"]["name"] == doc["metadata"]["name"]
    assert len(created) == len(docs) + 3
    (rule,) = [d for d in docs if d["kind"] == "PrometheusRule"]
    rules = yaml.safe_load((PROJECT / "config" / "prometheus" / "sedna-gm-rules.yaml").read_text())
    assert rule["spec"]["groups"] == rules["groups"]
    (board,) = [d for d in docs if d["metadata"]["name"].endswith("-dashboard")]
    dashboard = (PROJECT / "config" / "grafana" / "sedna-gm.json").read_text()
    assert json.loads(board["data"]["sedna-gm.json"]) == json.loads(dashboard)
    (deploy,) = [d for d in docs if d["kind"] == "Deployment"]
    pod = deploy["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert deploy["spec"]["replicas"] == 2
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert {v["name"] for v in pod["volumes"]} == {"config", "tmp", "tls", "metrics-token"}
    (svc,) = [d for d in docs if d["kind"] == "Service"]
    assert svc["metadata"]["name"] == "gm"  # Sedna's LCs dial gm.sedna:9000


@needs_helm
def test_values_switch_features_namespace_and_token() -> None:
    # every feature but dataset off: no pod-owning feature is left, so no pod grant either
    pod_features = (
        "incremental_learning", "lifelong_learning", "federated_learning", "joint_inference",
        "object_search", "object_tracking", "feature_extraction", "reid", "video_analytics",
    )  # fmt: skip
    off = [arg for f in pod_features for arg in ("--set", f"features.{f}.enabled=false")]
    docs = template(
        *off, "--set", "config.namespace=ai", "--set", "websocket.auth=token",
        "--set", "websocket.token.existingSecret=mine",
    )  # fmt: skip
    assert not [d for d in docs if d["kind"] == "Secret" and d["metadata"]["name"] != METRICS]
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap"]
    gm = yaml.safe_load(cm["data"]["gm.yaml"])
    assert gm["namespace"] == "ai"
    assert gm["websocket"]["tokenSecret"] == "sedna/mine"
    assert gm["features"]["incremental_learning"]["enabled"] is False
    roles = {(d["kind"], d["metadata"]["name"]): d for d in docs if d["kind"].endswith("Role")}
    watched = roles[("Role", "sedna-gm")]
    assert watched["metadata"]["namespace"] == "ai"
    resources = {r for rule in watched["rules"] for r in rule["resources"]}
    assert "pods" not in resources and "datasets" in resources  # their grants went with them
    assert ("ClusterRole", "sedna-gm") not in roles  # no cluster-wide Secret read
    self_role = roles[("Role", "sedna-gm-self")]
    assert {
        "apiGroups": [""],
        "resources": ["secrets"],
        "resourceNames": ["mine"],
        "verbs": ["get"],
    } in self_role["rules"]


def shared_grants(docs: list[dict[str, Any]]) -> list[str]:
    """(role, group, resource, verb) granted by more than one rule of its role."""
    out = []
    for doc in docs:
        if doc["kind"] not in ("Role", "ClusterRole"):
            continue
        seen: set[tuple[str, str, str, tuple[str, ...]]] = set()
        for rule in doc["rules"]:
            names = tuple(rule.get("resourceNames") or ())
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        key = (group, resource, verb, names)
                        if key in seen:
                            out.append(f"{doc['kind']} {doc['metadata']['name']}: {key}")
                        seen.add(key)
    return out


@needs_helm
@pytest.mark.parametrize(
    "values",
    [
        (),
        ("--set", "features.reid.enabled=false", "--set", "features.dataset.enabled=false"),
        ("--set", "config.namespace=ai", "--set", "features.incremental_learning.enabled=false"),
    ],
)
def test_no_two_rules_share_a_resource_and_verb(values: tuple[str, ...]) -> None:
    """Each grant once: ten features needing pods make one rule for pods, not ten."""
    docs = template(*values)
    assert shared_grants(docs) == []
    roles = [d for d in docs if d["kind"] in ("Role", "ClusterRole")]
    for role in roles:
        keys = [(tuple(r["apiGroups"]), tuple(r["verbs"]), tuple(r.get("resourceNames") or ()))
                for r in role["rules"]]  # fmt: skip
        resources = [(k, r) for k, rule in zip(keys, role["rules"], strict=True)
                     for r in rule["resources"]]  # fmt: skip
        assert len(resources) == len(set(resources))


def test_the_plain_rbac_grants_each_resource_and_verb_once() -> None:
    docs = [d for d in yaml.safe_load_all((PROJECT / "config" / "rbac.yaml").read_text()) if d]
    assert shared_grants(docs) == []


def _readyz(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@needs_helm
def test_a_gm_on_the_charts_gm_yaml_gets_ready_once_its_token_secret_exists(
    apiserver: Any, api_client: kubernetes.client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    docs = template("--set", f"config.namespace={namespace}", "--set", "websocket.auth=token")
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap"]
    gm = yaml.safe_load(cm["data"]["gm.yaml"])
    # Only what the cluster gives a pod differs: the API server and the local ports.
    kubeconfig = tmp_path / "kubeconfig"
    apiserver.write_kubeconfig(kubeconfig)
    gm["kubeConfig"] = str(kubeconfig)
    gm["websocket"].update(address="127.0.0.1", port=0)
    gm["metrics"].update(address="127.0.0.1", port=0)
    gm["leaderElection"]["leaseNamespace"] = namespace
    gm["websocket"]["tokenSecret"] = gm["websocket"]["tokenSecret"].replace(
        "sedna/", f"{namespace}/"
    )
    (secret,) = [d for d in docs if d["kind"] == "Secret" and d["metadata"]["name"] != METRICS]
    assert gm["metrics"]["tokenFile"] == "/metrics-token/token"  # the Secret's mount
    gm["metrics"]["tokenFile"] = str(tmp_path / "metrics-token")  # here: a file of ours
    (tmp_path / "metrics-token").write_text("m3trics\n")
    process = GM(gm, tmp_path)
    try:
        port = int(process.until(r"serving /metrics.* on 127\.0\.0\.1:(\d+)")[1])
        process.until(r"sedna-gm started")
        code, body = _readyz(port)
        assert code == 503, body
        assert "[-]lc-token failed: no LC token in websocket.tokenSecret" in body
        secret["metadata"]["namespace"] = namespace
        kubernetes.client.CoreV1Api(api_client).create_namespaced_secret(namespace, secret)
        wait_until(lambda: _readyz(port)[0] == 200, 15, "readiness once the chart's Secret exists")
        token = base64.b64decode(secret["data"]["token"]).decode()
        assert len(token) == 48
    finally:
        process.kill()


@needs_helm
def test_the_charts_default_takes_one_token_per_node_watched_not_read_per_dial(
    apiserver: Any,
    api_client: kubernetes.client.ApiClient,
    api_calls: Any,
    namespace: str,
    tmp_path: Path,
) -> None:
    """`auth: node` by default: ready with no Secret at all; a token that `token create`
    issues once the GM runs is taken at once (a watch, by label), proves its node only,
    and dials with made-up node names cost the API nothing (no GET per handshake)."""
    docs = template("--set", f"config.namespace={namespace}")
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap"]
    gm = yaml.safe_load(cm["data"]["gm.yaml"])
    assert gm["websocket"]["auth"] == "node"
    assert gm["websocket"]["nodeTokenNamespace"] == "sedna"  # the release's namespace
    (self_role,) = [d for d in docs if d["metadata"]["name"] == "sedna-gm-self"
                    and d["kind"] == "Role"]  # fmt: skip
    assert {"apiGroups": [""], "resources": ["secrets"], "verbs": ["list", "watch"]} in (
        self_role["rules"]
    )
    kubeconfig = tmp_path / "kubeconfig"
    apiserver.write_kubeconfig(kubeconfig)
    gm["kubeConfig"] = str(kubeconfig)
    gm["websocket"].update(address="127.0.0.1", port=0, nodeTokenNamespace=namespace)
    gm["metrics"].update(address="127.0.0.1", port=0)
    gm["leaderElection"]["leaseNamespace"] = namespace
    process = GM(gm, tmp_path)
    try:
        port = int(process.until(r"serving /metrics.* on 127\.0\.0\.1:(\d+)")[1])
        ws_port = int(process.until(r"LC websocket server listening on ws://127\.0\.0\.1:(\d+)")[1])
        wait_until(lambda: _readyz(port)[0] == 200, 15, "readiness without any token Secret")
        kube = KubeClient(api_client)
        token = issue_node_token(kube, "edge-node", namespace)
        other = issue_node_token(kube, "node-b", namespace)

        def dials() -> bool:
            try:
                FakeLC(ws_port, "edge-node", token=token).ws.close()
            except InvalidStatus:
                return False
            return True

        wait_until(dials, 10, "edge-node's LC taken with its issued token")
        for node, tok in (("edge-node", other), ("edge-node", None), ("node-b", token)):
            with pytest.raises(InvalidStatus) as refused:
                FakeLC(ws_port, node, token=tok)
            assert refused.value.response.status_code == 401
        for i in range(20):
            with pytest.raises(InvalidStatus):
                FakeLC(ws_port, f"made-up-{i}", token="x")
        secret_calls = {c.verb for c in api_calls.calls() if c.resource == "secrets"
                        and c.namespace == namespace}  # fmt: skip
        assert "list" in secret_calls and "watch" in secret_calls
        assert "get" not in secret_calls
    finally:
        process.kill()


def pod_spec(docs: list[dict[str, Any]]) -> dict[str, Any]:
    (deploy,) = [d for d in docs if d["kind"] == "Deployment"]
    spec: dict[str, Any] = deploy["spec"]["template"]["spec"]
    return spec


@needs_helm
def test_the_replicas_are_kept_apart_by_default() -> None:
    docs = template()
    (deploy,) = [d for d in docs if d["kind"] == "Deployment"]
    labels = deploy["spec"]["template"]["metadata"]["labels"]
    pod = pod_spec(docs)
    (term,) = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"].items() <= labels.items()
    spread = pod["topologySpreadConstraints"]
    assert [c["topologyKey"] for c in spread] == [
        "topology.kubernetes.io/zone",
        "kubernetes.io/hostname",
    ]
    for c in spread:  # never blocks scheduling (a one-node cluster runs both replicas)
        assert c["whenUnsatisfiable"] == "ScheduleAnyway" and c["maxSkew"] == 1
        assert c["labelSelector"]["matchLabels"].items() <= labels.items()

    required = pod_spec(template("--set", "podAntiAffinity=required"))["affinity"]
    (hard,) = required["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert hard["topologyKey"] == "kubernetes.io/hostname"
    off = pod_spec(
        template("--set", "podAntiAffinity=none", "--set", "topologySpread.enabled=false")
    )
    assert "affinity" not in off and "topologySpreadConstraints" not in off
    own = pod_spec(template("--set", "affinity.nodeAffinity.x=y"))
    assert own["affinity"] == {"nodeAffinity": {"x": "y"}}  # given: it replaces the chart's


@needs_helm
def test_a_bad_pod_anti_affinity_value_is_one_clear_error() -> None:
    assert HELM is not None
    proc = run(HELM, "template", "sedna-gm", str(CHART), "--set", "podAntiAffinity=sometimes")
    assert proc.returncode != 0
    assert 'podAntiAffinity: "sometimes" is not one of preferred, required, none' in proc.stderr


def ingress(*values: str) -> list[dict[str, Any]]:
    docs = template("--set", "networkPolicy.enabled=true", *values)
    (policy,) = [d for d in docs if d["kind"] == "NetworkPolicy"]
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    rules: list[dict[str, Any]] = policy["spec"].get("ingress") or []
    return rules


@needs_helm
def test_the_network_policy_opens_each_port_only_to_its_sources() -> None:
    # by default: no LC source (closed), /metrics from the monitoring namespace only
    assert ingress() == [
        {
            "ports": [{"port": "metrics", "protocol": "TCP"}],
            "from": [
                {
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": "monitoring"}
                    }
                }
            ],
        }
    ]
    sources = ingress(
        "--set", "networkPolicy.websocketFrom[0].ipBlock.cidr=10.8.0.0/16",
        "--set", "networkPolicy.metricsNamespace=",
        "--set", "networkPolicy.metricsFrom[0].podSelector.matchLabels.app=prometheus",
    )  # fmt: skip
    assert sources == [
        {
            "ports": [{"port": "websocket", "protocol": "TCP"}],
            "from": [{"ipBlock": {"cidr": "10.8.0.0/16"}}],
        },
        {
            "ports": [{"port": "metrics", "protocol": "TCP"}],
            "from": [{"podSelector": {"matchLabels": {"app": "prometheus"}}}],
        },
    ]
    closed = ingress("--set", "networkPolicy.metricsNamespace=")
    assert closed == []  # nothing may reach either port
    opened = ingress(
        "--set", "networkPolicy.websocketFromAnywhere=true",
        "--set", "networkPolicy.metricsFromAnywhere=true",
    )  # fmt: skip
    assert opened == [  # no `from`: every source, as the operator asked
        {"ports": [{"port": "websocket", "protocol": "TCP"}]},
        {"ports": [{"port": "metrics", "protocol": "TCP"}]},
    ]
