"""The joint inference feature declares every API call it makes (`Feature.access`), and
config/rbac.yaml grants every declared access (the session checks the calls themselves)."""

from __future__ import annotations

from pathlib import Path

import sedna_joint_inference.plugin as ji_plugin
from support.deployments import DeploymentControllerFactory
from support.rbac import RbacRules, access_rules, describe, feature_calls, gm_calls

from sedna.embedded.apiserver import ApiCall, APIServer

from .conftest import GMFactory
from .helpers import CLOUD_DEPLOYMENT, CLOUD_SERVICE, Api, sample_service, wait_until


def test_every_declared_access_is_granted() -> None:
    rules = RbacRules.load()
    missing = [
        ApiCall(verb, a.group, r, "ns")
        for a in ji_plugin.ACCESS
        for r in a.resources
        for verb in a.verbs
        if not rules.grants(ApiCall(verb, a.group, r, "ns"))
    ]
    assert not missing, describe(missing)


def test_a_whole_life_sends_only_declared_calls(
    api: Api,
    make_gm: GMFactory,
    embedded_apiserver: APIServer,
    deployment_controller: DeploymentControllerFactory,
    sample_dir: Path,
) -> None:
    deployment_controller()
    api.create_models()
    make_gm()
    ji = sample_service(sample_dir)
    ji["spec"]["cloudWorker"]["hpa"] = {"maxReplicas": 2}
    api.create(ji)
    api.until_running()
    api.patch_spec({"cloudWorker": {"hpa": {"maxReplicas": 3}}})
    template = api.ji()["spec"]["edgeWorker"]["template"]
    template["spec"]["containers"][0]["image"] = "little:v2"
    api.patch_spec({"edgeWorker": {"template": template}})
    api.services.delete(api.ns, CLOUD_SERVICE)
    api.deployments.delete(api.ns, CLOUD_DEPLOYMENT)
    wait_until(lambda: len(api.names("deployments")) == 2, 10.0, "healed")
    wait_until(lambda: api.names("services") == [CLOUD_SERVICE], 10.0, "service healed")
    api.patch_spec({"cloudWorker": {"hpa": None}})
    wait_until(lambda: api.names("hpas") == [], 10.0, "HPA deleted")
    mine = {c for c in gm_calls(embedded_apiserver) if c.namespace == api.ns}
    assert ApiCall("update", "apps", "deployments", api.ns) in mine  # the life rolled out
    assert ApiCall("delete", "autoscaling", "horizontalpodautoscalers", api.ns) in mine
    assert ApiCall("update", "sedna.io", "jointinferenceservices/status", api.ns) in mine
    undeclared = access_rules(ji_plugin.ACCESS).denied(feature_calls(mine))
    assert not undeclared, describe(undeclared)
