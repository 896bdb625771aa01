"""Request bodies: orjson-encoded on the client's pool, the client's own path otherwise."""

from __future__ import annotations

from typing import Any, cast

import kubernetes
import pytest
from kubernetes.client import rest

from sedna.runtime.kube import CONFIGMAPS, KubeClient
from sedna.runtime.kube.client import _encode, _pool_of


@pytest.fixture()
def kube(api_client: kubernetes.client.ApiClient) -> KubeClient:
    return KubeClient(api_client)


def test_bodies_round_trip_non_ascii_on_the_fast_path(kube: KubeClient, namespace: str) -> None:
    assert _pool_of(kube.api_client) is not None  # the default client takes the fast path
    cms = kube.resource(CONFIGMAPS)
    text = 'Grüße, 模型 ✓ "quoted" \\ \n'
    created = cms.create(namespace, {"metadata": {"name": "u"}, "data": {"k": text}})
    assert created["data"]["k"] == text
    created["data"]["k2"] = "é"
    replaced = cms.replace(namespace, "u", created)
    assert replaced["data"] == {"k": text, "k2": "é"}
    patched = cms.patch(namespace, "u", {"data": {"k3": "ß"}})
    assert patched["data"]["k3"] == "ß"


def test_bodies_orjson_cannot_encode_exactly_take_the_clients_path(
    kube: KubeClient, namespace: str
) -> None:
    body: dict[str, Any] = {"metadata": {"name": "ints"}, "data": {1: "one"}}
    assert _encode(body) is None  # json.dumps writes the key as "1"; orjson refuses
    created = kube.resource(CONFIGMAPS).create(namespace, body)
    assert created["data"] == {"1": "one"}


def test_a_custom_rest_client_gets_every_body_itself(
    api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    seen: list[tuple[str, Any]] = []

    class Recording(rest.RESTClientObject):
        def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            seen.append((method, kwargs.get("body")))
            return cast(Any, super()).request(method, url, *args, **kwargs)

    custom = kubernetes.client.ApiClient(api_client.configuration)
    custom.rest_client = Recording(api_client.configuration)
    assert _pool_of(custom) is None
    body = {"metadata": {"name": "c"}, "data": {"a": "b"}}
    created = KubeClient(custom, pool_size=None).resource(CONFIGMAPS).create(namespace, body)
    assert created["data"] == {"a": "b"}
    assert seen == [("POST", {"apiVersion": "v1", "kind": "ConfigMap", **body})]
