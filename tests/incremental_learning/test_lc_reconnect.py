"""An LC that restarts gets its node's Dataset, Models, job and services as soon as it
connects again, from the whole GM (several features), with resyncs an hour apart: what
it receives cannot come from a resync."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import sedna_dataset.plugin as ds_plugin
import sedna_incremental_learning.plugin as il_plugin
import sedna_joint_inference.plugin as ji_plugin
import yaml
from sedna_joint_inference.controller import JOINT_INFERENCE_SERVICES
from support.gm import GMHarness
from support.lc import LCBase
from support.waiting import wait_until

from .helpers import Api

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NODE = "edge-node"  # where the examples' Dataset, job and edge worker are


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


@pytest.fixture()
def gm(apiserver: Any, namespace: str) -> Iterator[GMHarness]:
    def client() -> kubernetes.client.ApiClient:
        cfg = getattr(apiserver, "configuration", None)
        if cfg is None:
            cfg = apiserver.client_configuration()
        return kubernetes.client.ApiClient(cfg)

    plugins = {p.FEATURE_NAME: p for p in (il_plugin, ds_plugin, ji_plugin)}
    harness = GMHarness(  # resyncs an hour apart (the harness's default)
        client, namespace, features={name: {} for name in plugins}, plugins=plugins
    )
    assert harness.config.minResyncPeriodSeconds >= 3600
    harness.start()
    yield harness
    harness.stop()


def _create_examples(api: Api) -> None:
    il = EXAMPLES / "incremental-learning"
    for name in ("01-models.yaml", "02-dataset.yaml", "03-incremental-learning-job.yaml"):
        for doc in _docs(il / name):
            api.create(doc)
    ji = EXAMPLES / "joint-inference"
    for doc in _docs(ji / "01-models.yaml"):
        api.create(doc)
    for doc in _docs(ji / "02-joint-inference-service.yaml"):
        doc["metadata"].pop("namespace", None)
        api.kube.resource(JOINT_INFERENCE_SERVICES).create(api.ns, doc)


def _held(lc: LCBase) -> dict[tuple[str, str], dict[str, Any]]:
    """What an LC holds after applying what it received: (kind, name) -> object."""
    held: dict[tuple[str, str], dict[str, Any]] = {}
    for m in lc.select():
        if m.operation == "delete":
            held.pop((m.kind, m.name), None)
        else:
            held[(m.kind, m.name)] = m.payload
    return held


def test_a_restarted_lc_gets_everything_routed_to_its_node_at_once(
    gm: GMHarness, api: Api, make_lc: Callable[[GMHarness, str], LCBase]
) -> None:
    _create_examples(api)
    api.wait_latest("Train/Waiting")
    first = make_lc(gm, NODE)
    expected = {
        ("dataset", "incremental-dataset"),
        ("incrementallearningjob", "helmet-detection-demo"),
        ("jointinferenceservice", "helmet-detection-inference-example"),
    }
    first.await_message("jointinferenceservice", "insert", "helmet-detection-inference-example")
    first.await_message("dataset", "insert", "incremental-dataset")
    first.await_message("incrementallearningjob", "insert", "helmet-detection-demo")
    held_before = _held(first)
    assert expected <= set(held_before)
    first.close()
    assert gm.manager is not None
    layer = gm.manager.container.message_layer()
    wait_until(lambda: NODE not in layer.connected_nodes(), 5.0, "the first LC gone")

    again = make_lc(gm, NODE)  # a restarted LC: it holds nothing
    wait_until(lambda: set(_held(again)) >= set(held_before), 5.0, "everything replayed")
    held_after = _held(again)
    for key, obj in held_before.items():
        assert held_after[key]["metadata"]["name"] == obj["metadata"]["name"]
        assert held_after[key]["spec"] == obj["spec"]
    # the Dataset comes before the job that uses it, as Sedna's LC needs
    order = [(m.kind, m.name) for m in again.select()]
    assert order.index(("dataset", "incremental-dataset")) < order.index(
        ("incrementallearningjob", "helmet-detection-demo")
    )
