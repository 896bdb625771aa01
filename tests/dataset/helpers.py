"""The Dataset tests' pieces: the real Manager with the plugin, a test LC, the API view.

The GM is `sedna.manager.Manager` with the `dataset` feature (and, where a test says
so, `incremental_learning`), talking to the in-process API server over HTTP; the LC
is a websocket client speaking Sedna's wire protocol, as the Go LC does. The common
parts of these are in `support` (tests/support/); this file adds the Dataset's side.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import kubernetes
import sedna_dataset.plugin as ds_plugin
import sedna_incremental_learning.plugin as il_plugin
from support.api import ApiBase
from support.gm import GMHarness
from support.lc import LCBase, Received
from support.logs import LogCapture
from support.samples import load_sample
from support.waiting import wait_until

from sedna.runtime import Clock

__all__ = ["LogCapture", "Received", "load_sample", "wait_until"]  # re-exported for the tests

SAMPLE = "dataset-demo0"  # the sample Dataset's name
SAMPLE_NODE = "edge0"  # and its node

PLUGINS: dict[str, object] = {
    ds_plugin.FEATURE_NAME: ds_plugin,
    il_plugin.FEATURE_NAME: il_plugin,
}


def sample_dataset(ref: Path, **spec: Any) -> dict[str, Any]:
    """Sedna's sample Dataset, spec fields overridden by `spec`."""
    ds = load_sample(ref, "dataset_v1alpha1.yaml")
    ds["spec"].update(spec)
    return ds


# -- the API -------------------------------------------------------------------------


class Api(ApiBase):
    """Raw access to the test namespace (the test's view of the cluster)."""

    subject = SAMPLE

    def dataset(self, name: str = SAMPLE) -> dict[str, Any]:
        return self.datasets.get(self.ns, name)

    def status(self, name: str = SAMPLE) -> dict[str, Any]:
        return dict(self.dataset(name).get("status") or {})

    def set_node(self, node: str, name: str = SAMPLE) -> None:
        self.datasets.patch(self.ns, name, {"spec": {"nodeName": node}})

    def event_list(self, name: str = SAMPLE) -> list[tuple[str, str, str, str]]:
        return [
            (e.get("type", ""), e["reason"], e.get("message", ""), e["involvedObject"]["kind"])
            for e in self.events_of(name)
        ]

    def check_event(self, event: Mapping[str, Any]) -> None:
        # every event the Dataset feature records is a Warning on the Dataset
        assert (event.get("type", ""), event["involvedObject"]["kind"]) == ("Warning", "Dataset")


# -- the LC --------------------------------------------------------------------------


class TestLC(LCBase):
    """One edge node's LocalController: collects what the GM sends, sends reports."""

    strict_base64 = True

    def messages(self, operation: str | None = None, name: str | None = None) -> list[Received]:
        return self.select("dataset", operation, name)

    def wait_for(
        self,
        operation: str,
        name: str = SAMPLE,
        pred: Callable[[Received], bool] = lambda m: True,
        timeout: float = 5.0,
    ) -> Received:
        return self.await_message("dataset", operation, name, pred, timeout)

    def report(self, namespace: str, payload: Any, name: str = SAMPLE) -> None:
        """A status report as the Go LC's dataset manager writes it."""
        # the Go LC uses the object's kind as is
        self.send_status(namespace, "Dataset", name, payload)


def deliver_sample(api: Api, lc: TestLC, ref: Path, **spec: Any) -> Received:
    """Create the sample Dataset (spec fields overridden by `spec`) and wait for its
    insert at `lc`: the GM has then told the node's LC, where the tests' scenarios start."""
    api.create(sample_dataset(ref, **spec))
    return lc.wait_for("insert")


def report_samples(api: Api, lc: TestLC, count: int) -> None:
    """A valid sample-count report from `lc`, waited for in the sample's status: proof the
    connection and the feature still work after whatever the test did before."""
    lc.report(api.ns, {"numberOfSamples": count})
    wait_until(lambda: api.status().get("numberOfSamples") == count)


# -- the GM --------------------------------------------------------------------------


class GM(GMHarness):
    """The real Manager with the named features only, scoped to the test namespace."""

    def __init__(
        self,
        api_client_factory: Callable[[], kubernetes.client.ApiClient],
        namespace: str,
        *,
        features: Sequence[str] = (ds_plugin.FEATURE_NAME,),
        clock: Clock | None = None,
        websocket: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            api_client_factory,
            namespace,
            features={name: {"workers": 1} for name in features},
            plugins={name: PLUGINS[name] for name in features},
            # the credential annotation may travel on the tests' plain ws
            websocket={"allowPlainCredentials": True, **dict(websocket or {})},
            clock=clock,
        )
        self.features = tuple(features)
