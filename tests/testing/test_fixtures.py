"""sedna.testing's fixtures, as a plugin's test suite gets them through pytest11."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sedna.runtime import DATASETS, PODS, KubeClient
from sedna.testing import GMHarness, Kubelet, LCBase, LogCapture, poll, wait_until


def test_the_plugin_is_registered_through_pytest11(pytestconfig: pytest.Config) -> None:
    assert pytestconfig.pluginmanager.has_plugin("sedna")


def test_a_gm_with_a_feature_from_its_entry_point_and_an_lc(
    sedna_gm: Callable[..., GMHarness],
    sedna_lc: Callable[[GMHarness, str], LCBase],
    sedna_kube: KubeClient,
    sedna_namespace: str,
    sedna_logs: LogCapture,
) -> None:
    gm = sedna_gm(features={"dataset": {}})
    assert [f.name for f in gm.manager.features] == ["dataset"]  # type: ignore[union-attr]
    lc = sedna_lc(gm, "edge-1")
    datasets = sedna_kube.resource(DATASETS)
    datasets.create(
        sedna_namespace,
        {
            "apiVersion": "sedna.io/v1alpha1",
            "kind": "Dataset",
            "metadata": {"name": "d"},
            "spec": {"url": "/data/d.txt", "format": "txt", "nodeName": "edge-1"},
        },
    )
    sent = lc.await_message("dataset", "insert", "d")
    assert sent.payload["spec"]["nodeName"] == "edge-1"
    lc.send_status(sedna_namespace, "dataset", "d", {"numberOfSamples": 7})
    status = poll(
        lambda: datasets.get(sedna_namespace, "d").get("status"),
        5.0,
        interval=0.02,
        failure="the LC's report never reached the Dataset's status",
    )
    assert status["numberOfSamples"] == 7
    sedna_logs.wait("feature dataset (plugin dataset) ready")


def test_the_kubelet_moves_pods_through_phases(
    sedna_kubelet: Kubelet, sedna_kube: KubeClient, sedna_namespace: str
) -> None:
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "w", "labels": {"app": "x"}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    sedna_kube.resource(PODS).create(sedna_namespace, pod)
    sedna_kubelet.run("w", node="edge-1")
    got = sedna_kube.resource(PODS).get(sedna_namespace, "w")
    assert (got["status"]["phase"], got["spec"]["nodeName"]) == ("Running", "edge-1")
    sedna_kubelet.fail("w", reason="OOMKilled", exit_code=137)
    got = sedna_kube.resource(PODS).get(sedna_namespace, "w")
    assert got["status"]["phase"] == "Failed"
    terminated = got["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated == {"exitCode": 137, "reason": "OOMKilled"}
    assert [p["metadata"]["name"] for p in sedna_kubelet.list("app=x")] == ["w"]


def test_wait_until_fails_with_what_it_waited_for() -> None:
    with pytest.raises(AssertionError, match="timed out waiting for the moon"):
        wait_until(lambda: False, 0.05, "the moon")
