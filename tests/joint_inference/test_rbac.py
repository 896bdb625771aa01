"""config/rbac.yaml grants exactly what the joint inference controller sends: every call
of a whole life (audited at the API server by the GM's User-Agent) is declared in the
feature's `Feature.access`, and every declared access is granted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes
import sedna_joint_inference.plugin as ji_plugin
from support.deployments import DeploymentControllerFactory

from sedna.embedded.apiserver import APIServer

from .helpers import CLOUD_DEPLOYMENT, GM, Api, sample_service, wait_until

RBAC = Path(__file__).resolve().parents[2] / "config" / "rbac.yaml"

# what the runtime core itself calls (message layer's Node watch, the event recorder)
CORE = {("", "nodes"): {"list", "watch"}, ("", "events"): {"create", "patch"}}


def declared() -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {k: set(v) for k, v in CORE.items()}
    (feature,) = ji_plugin.sedna_features()
    for a in feature.access:
        for r in a.resources:
            out.setdefault((a.group, r), set()).update(a.verbs)
    return out


def granted() -> dict[tuple[str, str], set[str]]:
    import yaml

    out: dict[tuple[str, str], set[str]] = {}
    for doc in yaml.safe_load_all(RBAC.read_text()):
        if doc and doc["kind"] == "ClusterRole":
            for rule in doc["rules"]:
                for g in rule["apiGroups"]:
                    for r in rule["resources"]:
                        out.setdefault((g, r), set()).update(rule["verbs"])
    return out


def allowed(grants: dict[tuple[str, str], set[str]], group: str, res: str, verb: str) -> bool:
    wild = "*/" + res.split("/", 1)[1] if "/" in res else "*"
    return any(
        verb in grants.get((group, r), set()) or "*" in grants.get((group, r), set())
        for r in (res, wild)
    )


def test_every_declared_access_is_granted() -> None:
    grants = granted()
    missing = sorted(
        f"{g or 'core'}/{r}: {v}"
        for (g, r), verbs in declared().items()
        for v in verbs
        if not allowed(grants, g, r, v)
    )
    assert not missing, f"config/rbac.yaml does not grant {missing}"


def test_a_whole_life_sends_only_declared_calls(
    api: Api,
    apiserver: Any,
    embedded_apiserver: APIServer,
    namespace: str,
    deployment_controller: DeploymentControllerFactory,
    sedna_reference: Path,
) -> None:
    agent = f"sedna-gm-under-test/{namespace}"

    def client() -> kubernetes.client.ApiClient:
        cfg = kubernetes.client.Configuration()
        cfg.host = apiserver.url
        c = kubernetes.client.ApiClient(cfg)
        c.user_agent = agent
        return c

    embedded_apiserver.faults.audit(agent)
    deployment_controller()
    api.create_models()
    gm = GM(client, namespace).start()
    try:
        ji = sample_service(sedna_reference)
        ji["spec"]["cloudWorker"]["hpa"] = {"maxReplicas": 2}
        api.create(ji)
        api.until_running()
        api.patch_spec({"cloudWorker": {"hpa": {"maxReplicas": 3}}})
        template = api.ji()["spec"]["edgeWorker"]["template"]
        template["spec"]["containers"][0]["image"] = "little:v2"
        api.patch_spec({"edgeWorker": {"template": template}})
        api.services.delete(api.ns, f"{ji['metadata']['name']}-cloud")
        api.deployments.delete(api.ns, CLOUD_DEPLOYMENT)
        wait_until(lambda: len(api.names("deployments")) == 2, 10.0, "healed")
        api.patch_spec({"cloudWorker": {"hpa": None}})
        wait_until(lambda: api.names("hpas") == [], 10.0, "HPA deleted")
        api.until_running()
    finally:
        gm.stop()
    calls = set(embedded_apiserver.faults.audited)
    assert ("update", "apps", "deployments") in calls  # the life did roll out
    assert ("delete", "autoscaling", "horizontalpodautoscalers") in calls
    decl = declared()
    undeclared = sorted(
        f"{g or 'core'}/{r}: {v}" for v, g, r in calls if not allowed(decl, g, r, v)
    )
    assert not undeclared, f"calls not in Feature.access: {undeclared}"
