"""Every bundled feature watches only its own workers' pods.

The GM runs with every discovered feature enabled; each pod informer it opened must be
label-scoped by a feature kind's worker label and trim what it caches, so a cluster's
foreign pods are neither listed, watched nor cached. A new feature that asks for an
unscoped pod informer fails here.
"""

from __future__ import annotations

from typing import Any

import kubernetes
from support.gm import GMHarness
from support.waiting import wait_until

from sedna.plugins.loader import discover_plugins
from sedna.runtime.informers import worker_pod_transform


def test_all_features_open_only_label_scoped_pod_informers(
    apiserver: Any, api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    def client() -> kubernetes.client.ApiClient:
        cfg = getattr(apiserver, "configuration", None)
        if cfg is None:
            cfg = kubernetes.client.Configuration()
            cfg.host = apiserver.url
        return kubernetes.client.ApiClient(cfg)

    names = [p.name for p in discover_plugins()]
    gm = GMHarness(client, namespace, features={n: {} for n in names}, plugins={}).start()
    try:
        assert gm.manager is not None
        assert len(gm.manager.features) == len(names)
        core = kubernetes.client.CoreV1Api(api_client)
        core.create_namespaced_pod(
            namespace,
            {
                "metadata": {"name": "foreign", "labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        )
        factory = gm.manager.container.informers()
        pods = [i for i in factory.informers if i.resource.plural == "pods"]
        assert pods, "no feature watches pods"
        for inf in pods:
            selector = str(inf.label_selector or "")
            assert selector.endswith(".sedna.io/name"), f"{inf.name}: selector {selector!r}"
            assert inf.transform is worker_pod_transform
        # a pod every feature's workers could carry is seen; the foreign one by none
        core.create_namespaced_pod(
            namespace,
            {
                "metadata": {
                    "name": "worker",
                    "labels": {"incrementallearningjob.sedna.io/name": "j"},
                },
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        )
        il = [i for i in pods if i.label_selector == "incrementallearningjob.sedna.io/name"]
        assert len(il) == 1
        wait_until(lambda: il[0].lister.get(namespace, "worker") is not None, what="worker")
        assert all(i.lister.get(namespace, "foreign") is None for i in pods)
    finally:
        gm.stop()
