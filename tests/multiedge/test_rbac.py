"""config/rbac.yaml grants what the five multi-edge features send: every call of a life
of each kind (audited at the API server by the GM's User-Agent) is declared in the
features' `Feature.access`, and every declared access is granted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes
import pytest
from support.deployments import DeploymentControllerFactory
from support.rbac import allowed, declared, gm_calls, granted_by_resource

from sedna.embedded.apiserver import APIServer

from .helpers import (
    GM,
    PLUGINS,
    Api,
    feature_extraction,
    fixed_sample,
    model,
    reid_job,
    video_analytics_job,
    wait_until,
)


def features() -> list[Any]:
    return [f for plugin in PLUGINS.values() for f in plugin.sedna_features()]  # type: ignore[attr-defined]


def test_every_declared_access_is_granted() -> None:
    grants = granted_by_resource()
    missing = sorted(
        f"{g or 'core'}/{r}: {v}"
        for (g, r), verbs in declared(features()).items()
        for v in verbs
        if not allowed(grants, g, r, v)
    )
    assert not missing, f"config/rbac.yaml does not grant {missing}"


@pytest.fixture()
def audited_gm(
    apiserver: Any, embedded_apiserver: APIServer, namespace: str
) -> tuple[GM, APIServer]:
    agent = f"sedna-gm-under-test/{namespace}"

    def client() -> kubernetes.client.ApiClient:
        cfg = apiserver.client_configuration()
        c = kubernetes.client.ApiClient(cfg)
        c.user_agent = agent
        return c

    return GM(client, namespace), embedded_apiserver


def test_lives_of_all_five_send_only_declared_calls(
    api: Api,
    audited_gm: tuple[GM, APIServer],
    deployment_controller: DeploymentControllerFactory,
    sample_dir: Path,
) -> None:
    gm, server = audited_gm
    deployment_controller()
    gm.start()
    try:
        api.create(model("fe-model"))
        api.create(model("va-model"))
        api.create(fixed_sample(sample_dir, "objectsearchservice_v1alpha1.yaml"))
        api.create(fixed_sample(sample_dir, "objecttrackingservice_v1alpha1.yaml"))
        api.create(feature_extraction())
        api.create(reid_job())
        api.create(video_analytics_job())
        api.wait_pods("pedestrian-search", 2, "trackingworker")
        api.wait_pods("reid-demo", 1)
        api.wait_pods("va-demo", 1)
        # heal, roll out, prune
        kind = "ObjectTrackingService"
        api.pods.delete(
            api.ns, api.pods_of("pedestrian-tracking", "trackingworker")[0]["metadata"]["name"]
        )
        api.services.delete(api.ns, "fe-demo-fe")
        current = api.owner(kind, "pedestrian-tracking")
        current["spec"]["trackingWorkers"].pop(1)
        current["spec"]["reidWorkers"]["replicas"] = 1
        api.owners[kind].replace(api.ns, "pedestrian-tracking", current)
        wait_until(
            lambda: len(api.pods_of("pedestrian-tracking", "trackingworker")) == 1,
            10.0,
            "pruned",
        )
        wait_until(
            lambda: (
                api.deployment("pedestrian-tracking-deployment-reidworker")["spec"]["replicas"] == 1
            ),
            10.0,
            "rolled out",
        )
        api.wait_service("fe-demo-fe")
        for p in api.pods_of("reid-demo") + api.pods_of("va-demo"):
            api.set_phase(p, "Succeeded")
        api.wait_condition("ReidJob", "reid-demo", "Completed")
        api.wait_condition("VideoAnalyticsJob", "va-demo", "Completed")
    finally:
        gm.stop()
    seen = gm_calls(server) | server.requests.calls("sedna-gm-under-test/")
    calls = {(c.verb, c.group, c.resource) for c in seen if c.namespace == api.ns}
    assert ("create", "", "pods") in calls and ("delete", "", "pods") in calls
    assert ("update", "apps", "deployments") in calls
    decl = declared(features())
    undeclared = sorted(
        f"{g or 'core'}/{r}: {v}" for v, g, r in calls if not allowed(decl, g, r, v)
    )
    assert not undeclared, f"calls not in Feature.access: {undeclared}"
