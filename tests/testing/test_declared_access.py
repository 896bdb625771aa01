"""sedna.testing holds a feature to its declared access: what its RBAC would not grant is
refused with kube's 403, and the test fails naming the verb and the resource."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import kubernetes
import pytest
from support.rbac import declare_test_feature_access

from sedna.embedded.apiserver.authorization import AccessAttributes
from sedna.runtime import (
    MODELS,
    ApiAccess,
    ApiError,
    Controller,
    ControllerContext,
    DeletedFinalStateUnknown,
    Feature,
    FeatureController,
    KubeClient,
    ResourceEventHandlerFuncs,
    Result,
    hookimpl,
    meta_namespace_key,
)
from sedna.testing import GMHarness, api_client_for, poll

READ_MODELS = ApiAccess("sedna.io", ["models"], ["get", "list", "watch"])
PATCH_STATUS = ApiAccess("sedna.io", ["models/status"], ["patch"])
# the test features' calls are not the shipped GM's: the session's RBAC check skips them
declare_test_feature_access([READ_MODELS, PATCH_STATUS])


class StatusWriter(Controller):
    """Marks every Model checked in its status, keeping each call's outcome."""

    def __init__(self, ctx: ControllerContext, outcomes: list[int]) -> None:
        self.kube = ctx.kube
        self.outcomes = outcomes
        self.informer = ctx.informers.informer(MODELS)
        super().__init__("status_writer", workers=1, informer=self.informer)
        self.informer.add_event_handler(ResourceEventHandlerFuncs(add=self._enqueue))

    def _enqueue(self, obj: Mapping[str, Any] | DeletedFinalStateUnknown) -> None:
        self.enqueue(meta_namespace_key(obj))

    def sync(self, key: str) -> Result | None:
        namespace, _, name = key.partition("/")
        try:
            self.kube.resource(MODELS).patch(
                namespace, name, {"status": {"formats": ["pb"]}}, subresource="status"
            )
        except ApiError as exc:
            self.outcomes.append(exc.status)
            return None
        self.outcomes.append(200)
        return None

    def start(self) -> None:
        self.run()


def status_writer(access: Sequence[ApiAccess], outcomes: list[int]) -> object:
    def build(ctx: ControllerContext) -> FeatureController:
        return StatusWriter(ctx, outcomes)

    class Plugin:
        @hookimpl
        def sedna_features(self) -> Sequence[Feature]:
            return [Feature("status_writer", ["Model"], build, access=list(access))]

    return Plugin()


def run_writer(
    server: Any, kube: KubeClient, namespace: str, access: Sequence[ApiAccess]
) -> tuple[GMHarness, list[int]]:
    outcomes: list[int] = []
    gm = GMHarness(
        lambda: api_client_for(server),
        namespace,
        features={"status_writer": {}},
        plugins={"status_writer": status_writer(access, outcomes)},
        apiserver=server,
    ).start()
    kube.resource(MODELS).create(
        namespace,
        {
            "apiVersion": "sedna.io/v1alpha1",
            "kind": "Model",
            "metadata": {"name": "m"},
            "spec": {"url": "s3://models/m.pb", "format": "pb"},
        },
    )
    poll(lambda: outcomes, 10.0, interval=0.02, failure="the feature never synced the Model")
    return gm, outcomes


def test_a_forgotten_grant_is_refused_and_fails_the_test_naming_it(
    sedna_apiserver: Any, sedna_kube: KubeClient, sedna_namespace: str
) -> None:
    gm, outcomes = run_writer(sedna_apiserver, sedna_kube, sedna_namespace, [READ_MODELS])
    assert outcomes[0] == 403  # as on a cluster whose RBAC was generated for this feature
    with pytest.raises(AssertionError) as failed:
        gm.stop()
    line = str(failed.value)
    assert "\n" not in line
    assert f"patch sedna.io/models/status in namespace {sedna_namespace}" in line
    assert "declared access" in line


def test_a_declared_grant_is_allowed(
    sedna_apiserver: Any, sedna_kube: KubeClient, sedna_namespace: str
) -> None:
    gm, outcomes = run_writer(
        sedna_apiserver, sedna_kube, sedna_namespace, [READ_MODELS, PATCH_STATUS]
    )
    assert outcomes[0] == 200
    gm.stop()  # nothing refused: no failure


def test_the_refusal_is_kubes_403(sedna_apiserver: Any) -> None:
    """The official client sees the Status kube-apiserver's RBAC authorizer sends."""

    def only_pods(attrs: AccessAttributes) -> bool:
        return attrs.resource == "pods"

    token = sedna_apiserver.issue_token("system:serviceaccount:sedna:sedna-gm", only_pods)
    client = api_client_for(sedna_apiserver)
    client.configuration.api_key = {"authorization": token}
    client.set_default_header("Authorization", f"Bearer {token}")  # type: ignore[no-untyped-call]
    try:
        core = kubernetes.client.CoreV1Api(client)
        core.list_namespaced_pod("default")
        with pytest.raises(kubernetes.client.ApiException) as refused:
            core.read_namespaced_secret("s", "default")
        assert refused.value.status == 403
        assert json.loads(refused.value.body)["message"] == (
            'secrets "s" is forbidden: User "system:serviceaccount:sedna:sedna-gm" cannot get '
            'resource "secrets" in API group "" in the namespace "default"'
        )
        with pytest.raises(kubernetes.client.ApiException) as cluster:
            kubernetes.client.CustomObjectsApi(client).list_cluster_custom_object(
                "sedna.io", "v1alpha1", "models"
            )
        assert json.loads(cluster.value.body)["message"].endswith(
            'cannot list resource "models" in API group "sedna.io" at the cluster scope'
        )
        assert kubernetes.client.VersionApi(client).get_code().major  # discovery stays open
    finally:
        sedna_apiserver.revoke_token(token)
    with pytest.raises(kubernetes.client.ApiException) as revoked:
        kubernetes.client.CoreV1Api(client).list_namespaced_pod("default")
    assert revoked.value.status == 401  # a revoked token is no token
    client.close()  # type: ignore[no-untyped-call]
