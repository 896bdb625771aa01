"""Request bodies: orjson-encoded on the client's pool, the client's own path otherwise."""

from __future__ import annotations

from typing import Any, cast

import kubernetes
import pytest
import urllib3
from kubernetes.client import rest

from sedna.runtime.kube import CONFIGMAPS, KubeClient
from sedna.runtime.kube.client import _encode, _manager_of


@pytest.fixture()
def kube(api_client: kubernetes.client.ApiClient) -> KubeClient:
    return KubeClient(api_client)


def test_bodies_round_trip_non_ascii_on_the_fast_path(kube: KubeClient, namespace: str) -> None:
    assert _manager_of(kube.api_client) is not None  # the default client takes the fast path
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
    assert _manager_of(custom) is None
    body = {"metadata": {"name": "c"}, "data": {"a": "b"}}
    created = KubeClient(custom, pool_size=None).resource(CONFIGMAPS).create(namespace, body)
    assert created["data"] == {"a": "b"}
    assert seen == [("POST", {"apiVersion": "v1", "kind": "ConfigMap", **body})]


# -- the manager's pool, used directly -------------------------------------------------


def test_writes_use_the_managers_own_pool_and_keep_its_connections(
    api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    own = kubernetes.client.ApiClient(api_client.configuration)
    own.default_headers.update(api_client.default_headers)
    kube = KubeClient(own)
    cms = kube.resource(CONFIGMAPS)
    for i in range(5):
        cms.create(namespace, {"metadata": {"name": f"p{i}"}, "data": {"i": str(i)}})
    manager = own.rest_client.pool_manager
    assert len(manager.pools) == 1  # no second pool, no second stack
    (pool,) = [manager.pools[k] for k in manager.pools.keys()]  # noqa: SIM118 (no __iter__)
    assert pool.num_requests >= 5
    assert pool.num_connections == 1  # one kept-alive connection served every write


def test_a_cleared_manager_is_asked_again(
    api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    own = kubernetes.client.ApiClient(api_client.configuration)
    own.default_headers.update(api_client.default_headers)
    cms = KubeClient(own).resource(CONFIGMAPS)
    cms.create(namespace, {"metadata": {"name": "before"}})
    own.rest_client.pool_manager.clear()  # closes the pool the client looked up
    created = cms.create(namespace, {"metadata": {"name": "after"}})
    assert created["metadata"]["name"] == "after"
    assert cms.get(namespace, "after")["metadata"]["name"] == "after"


def test_a_host_with_a_path_prefix_keeps_it(api_client: kubernetes.client.ApiClient) -> None:
    kube = KubeClient(api_client)
    manager = urllib3.PoolManager()
    url = "https://gw.example:8443/k8s/clusters/c-1/api/v1/namespaces/a/configmaps?dryRun=All"
    target = kube._direct_pool(manager, url)
    assert target is not None
    pool, uri = target
    assert (pool.host, pool.port, pool.scheme) == ("gw.example", 8443, "https")
    assert uri == "/k8s/clusters/c-1/api/v1/namespaces/a/configmaps?dryRun=All"
    # after :844, a URL on :8443 starts with the same characters but is another origin
    short = kube._direct_pool(manager, "https://gw.example:844/api/v1/pods")
    assert short is not None and short[0].port == 844
    longer = kube._direct_pool(manager, "https://gw.example:8443/api/v1/pods")
    assert longer is not None and longer[0].port == 8443 and longer[1] == "/api/v1/pods"


def test_proxied_managers_keep_their_own_routing(api_client: kubernetes.client.ApiClient) -> None:
    kube = KubeClient(api_client)
    proxied = urllib3.ProxyManager("http://proxy.example:3128")
    assert kube._direct_pool(proxied, "https://api.example:6443/api/v1/pods") is None
