"""Error counters have a sample at 0 from the start, for every known label value, so a
dashboard's `rate(...)` of a healthy GM shows 0, not No data (controller-runtime does
the same for its controllers)."""

from __future__ import annotations

from typing import Any

import kubernetes
import sedna_incremental_learning.plugin as il_plugin
from prometheus_client import CollectorRegistry

from sedna.runtime import Controller, Metrics
from sedna.runtime.messaging import Reason
from sedna.testing import GMHarness, api_client_for


class Idle(Controller):
    def sync(self, key: str) -> None:
        return None


def test_a_controller_starts_its_series_at_zero() -> None:
    registry = CollectorRegistry()
    Idle("idle", metrics=registry)
    labels = {"controller": "idle"}
    assert registry.get_sample_value("controller_reconcile_errors_total", labels) == 0.0
    assert registry.get_sample_value("controller_reconcile_panics_total", labels) == 0.0
    for result in ("success", "error", "requeue", "requeue_after"):
        total = registry.get_sample_value(
            "controller_reconcile_total", {**labels, "result": result}
        )
        assert total == 0.0, result


def test_every_rejection_reason_starts_at_zero() -> None:
    metrics = Metrics()
    for reason in Reason:
        value = metrics.registry.get_sample_value(
            "lc_messages_rejected_total", {"reason": reason.value}
        )
        assert value == 0.0, reason
    metrics.lc_messages_rejected.labels(reason="not_routed").inc()
    assert (
        metrics.registry.get_sample_value("lc_messages_rejected_total", {"reason": "not_routed"})
        == 1.0
    )


def test_a_running_gm_has_zero_errors_for_each_feature_controller(
    apiserver: Any, api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    gm = GMHarness(
        lambda: api_client_for(apiserver),
        namespace,
        features={il_plugin.FEATURE_NAME: {}},
        plugins={il_plugin.FEATURE_NAME: il_plugin},
    ).start()
    try:
        assert gm.manager is not None
        registry = gm.manager.container.metrics().registry
        controllers = {
            s.labels["controller"]
            for fam in registry.collect()
            if fam.name == "controller_reconcile_errors"
            for s in fam.samples
            if s.name == "controller_reconcile_errors_total"
        }
        assert controllers  # the feature's controllers, before any object was synced
        for name in controllers:
            errors = registry.get_sample_value(
                "controller_reconcile_errors_total", {"controller": name}
            )
            assert errors == 0.0, name
        rejected = registry.get_sample_value("lc_messages_rejected_total", {"reason": "not_routed"})
        assert rejected == 0.0
    finally:
        gm.stop()
