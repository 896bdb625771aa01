"""What an operator watches: job gauges, stage transitions, per-node LC series, JSON log
fields, and every metric the shipped dashboard and alert rules query on a running GM."""

from __future__ import annotations

import io
import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml
from loguru import logger
from prometheus_client import CollectorRegistry, generate_latest

from sedna.runtime import FakeClock
from sedna.runtime.controller import Controller
from sedna.runtime.informers import SharedInformerFactory
from sedna.runtime.kube import INCREMENTAL_LEARNING_JOBS, KubeClient
from sedna.runtime.logging import configure_logging
from sedna.runtime.metrics import Metrics
from sedna.runtime.observability import NodeConnectionCollector, job_state, stage_started
from tests.cluster.helpers import PROJECT
from tests.framework.test_cli_run import GM, METRICS_TOKEN, base_config
from tests.support.waiting import wait_until

DASHBOARD = PROJECT / "config" / "grafana" / "sedna-gm.json"
RULES = PROJECT / "config" / "prometheus" / "sedna-gm-rules.yaml"
_PREFIXES = ("gm_", "sedna_", "lc_", "controller_", "workqueue_", "process_", "python_",
             "leader_election_", "kube_events_")  # fmt: skip
_SUFFIXES = ("_bucket", "_sum", "_count", "_total", "_created")


def queried_metrics() -> set[str]:
    exprs = [t["expr"] for p in json.loads(DASHBOARD.read_text())["panels"] for t in p["targets"]]
    for group in yaml.safe_load(RULES.read_text())["groups"]:
        exprs.extend(str(r["expr"]) for r in group["rules"])
    names = {n for e in exprs for n in re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", e)}
    return {n for n in names if n.startswith(_PREFIXES)}


def families(text: str) -> set[str]:
    return set(re.findall(r"^# TYPE (\S+) ", text, re.M))


def family_of(name: str, known: set[str]) -> bool:
    if name in known:
        return True
    return any(name.endswith(s) and name[: -len(s)] in known for s in _SUFFIXES)


def test_every_metric_of_the_dashboard_and_the_alerts_exists_on_a_running_gm(
    apiserver: Any, tmp_path: Path
) -> None:
    wanted = queried_metrics()
    assert {
        "gm_ready", "lc_node_connected", "sedna_jobs", "sedna_job_stage_oldest_seconds",
        "controller_reconcile_errors_total", "process_resident_memory_bytes",
    } <= wanted  # fmt: skip
    config = base_config(apiserver, tmp_path)
    config["features"] = {}  # every installed feature
    gm = GM(config, tmp_path)
    try:
        port = int(gm.until(r"serving /metrics.* on 127\.0\.0\.1:(\d+)")[1])
        gm.until(r"sedna-gm started")
        scrape = urllib.request.Request(
            f"http://127.0.0.1:{port}/metrics",
            headers={"Authorization": f"Bearer {METRICS_TOKEN}"},
        )
        with urllib.request.urlopen(scrape, timeout=5) as r:
            text = r.read().decode()
    finally:
        gm.kill()
    known = families(text)
    missing = sorted(n for n in wanted if not family_of(n, known))
    assert not missing, missing
    assert "gm_ready 1.0" in text
    assert "sedna_jobs{" not in text or "feature=" in text


@pytest.fixture()
def il_informer(api_client: kubernetes.client.ApiClient, namespace: str) -> Iterator[Any]:
    factory = SharedInformerFactory(KubeClient(api_client), namespace=namespace)
    informer = factory.informer(INCREMENTAL_LEARNING_JOBS)
    yield factory, informer
    factory.stop()


def _job(name: str, conditions: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "IncrementalLearningJob",
        "metadata": {"name": name},
        "spec": {},
        "status": {"conditions": conditions},
    }


def _cond(stage: str, kind: str, at: str) -> dict[str, str]:
    return {"stage": stage, "type": kind, "status": "True", "lastTransitionTime": at}


def test_job_gauges_and_stage_transitions_from_the_caches(
    api_client: kubernetes.client.ApiClient, namespace: str, il_informer: Any
) -> None:
    factory, informer = il_informer
    metrics = Metrics()
    clock = FakeClock()
    metrics.job_states.clock = clock
    metrics.job_states.track("incremental_learning", informer)
    metrics.stage_transitions.watch(informer)
    factory.start()
    assert factory.wait_for_cache_sync(10)
    api = kubernetes.client.CustomObjectsApi(api_client)
    args = ("sedna.io", "v1alpha1", namespace, "incrementallearningjobs")
    t0 = "2026-01-01T00:00:00Z"
    for name in ("a", "b"):
        created = api.create_namespaced_custom_object(*args, _job(name, []))
        created["status"] = {"conditions": [_cond("Train", "Waiting", t0)]}
        api.replace_namespaced_custom_object_status(*args, name, created)
    wait_until(lambda: len(informer.lister.list()) == 2 and all(
        (o.get("status") or {}).get("conditions") for o in informer.lister.list()
    ), 5, "both jobs in the cache")  # fmt: skip
    job = api.get_namespaced_custom_object(*args, "a")
    job["status"]["conditions"] += [
        _cond("Train", "Running", "2026-01-01T00:01:00Z"),
        _cond("Eval", "Waiting", "2026-01-01T00:10:00Z"),
    ]
    api.replace_namespaced_custom_object_status(*args, "a", job)
    reg = metrics.registry

    def value(name: str, **labels: str) -> float | None:
        return reg.get_sample_value(name, labels)

    wait_until(
        lambda: value("sedna_job_stage_transitions_total", kind="IncrementalLearningJob",
                      stage="Eval", condition="Waiting") == 1, 5, "the transition",
    )  # fmt: skip
    # Train ran from 00:00 (its first condition) to 00:10, when Eval began.
    assert value("sedna_job_stage_duration_seconds_sum", kind="IncrementalLearningJob",
                 stage="Train") == 600  # fmt: skip
    common = {"feature": "incremental_learning", "kind": "IncrementalLearningJob", "phase": ""}
    assert value("sedna_jobs", stage="Train", condition="Waiting", **common) == 1
    assert value("sedna_jobs", stage="Eval", condition="Waiting", **common) == 1
    oldest = value("sedna_job_stage_oldest_seconds", feature="incremental_learning",
                   kind="IncrementalLearningJob", stage="Train")  # fmt: skip
    assert oldest is not None and oldest >= 0


def test_node_series_only_for_known_nodes_and_zero_once_gone() -> None:
    registry = CollectorRegistry()
    collector = NodeConnectionCollector()
    registry.register(collector)
    connected = {"edge-1", "made-up"}
    collector.bind(lambda: connected, lambda: ["edge-1", "edge-2"])
    text = generate_latest(registry).decode()
    assert 'lc_node_connected{node="edge-1"} 1.0' in text
    assert "made-up" not in text and "edge-2" not in text  # never connected: no series
    connected.clear()
    assert 'lc_node_connected{node="edge-1"} 0.0' in generate_latest(registry).decode()
    collector.bind(lambda: connected, lambda: [])  # the Node was deleted
    assert "edge-1" not in generate_latest(registry).decode()


def test_job_state_of_staged_and_phased_kinds() -> None:
    staged = _job("a", [_cond("Train", "Completed", "2026-01-01T00:00:00Z"),
                        _cond("Eval", "Waiting", "2026-01-01T00:05:00Z"),
                        _cond("Eval", "Running", "2026-01-01T00:06:00Z")])  # fmt: skip
    assert job_state(staged) == ("Eval", "Running", "")
    assert stage_started(staged) == stage_started(
        _job("b", [_cond("Eval", "Waiting", "2026-01-01T00:05:00Z")])
    )
    phased = {"status": {"phase": "Running", "conditions": [{"type": "Running"}]}}
    assert job_state(phased) == ("", "Running", "Running")
    assert job_state({}) == ("", "", "")
    assert stage_started({"status": {"conditions": [{"stage": "Train"}]}}) is None


def test_json_logs_carry_job_and_kind_as_fields() -> None:
    out = io.StringIO()
    configure_logging("INFO", "json", out)

    class Logs(Controller):
        def sync(self, key: str) -> None:
            logger.bind(stage="Train", node="edge-1", pod="p-1").info("synced {}", key)

    controller = Logs("IncrementalLearningJob", metrics=CollectorRegistry(), clock=FakeClock())
    controller.run()
    try:
        controller.enqueue("ns/job-1")
        wait_until(lambda: "synced" in out.getvalue(), 5, "the sync's log line")
    finally:
        controller.stop(drain=False, timeout=5)
        configure_logging("INFO", "text")
    line = next(json.loads(x) for x in out.getvalue().splitlines() if "synced" in x)
    assert line["job"] == "ns/job-1"
    assert line["kind"] == "IncrementalLearningJob"
    assert (line["stage"], line["node"], line["pod"]) == ("Train", "edge-1", "p-1")
    assert "extra" not in line or "job" not in line["extra"]
