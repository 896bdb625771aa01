"""The owned-workload family's pure parts: spec checks, Deployment health, conditions."""

from __future__ import annotations

from typing import Any

import pytest
from sedna_joint_inference.report import ReportError, metrics_from_report
from sedna_joint_inference.spec import edge_node

from sedna.runtime import (
    SpecError,
    append_service_condition,
    controller_of,
    deployment_failure_message,
    deployment_health,
    is_finished,
    parse_hpa,
    parse_template,
    spec_hash,
)


def dep(*conds: tuple[str, str, str], generation: int = 1, observed: int = 1) -> dict[str, Any]:
    return {
        "metadata": {"name": "d", "generation": generation},
        "status": {
            "observedGeneration": observed,
            "conditions": [
                {"type": t, "status": s, "reason": r, "message": f"{t} {r}"} for t, s, r in conds
            ],
        },
    }


def test_a_deployment_without_conditions_is_progressing_not_failed() -> None:
    """Sedna issue 234: the Go GM counts it failed and fails the service at creation."""
    assert deployment_health({"metadata": {"name": "d"}}) == "Progressing"
    assert deployment_health(dep()) == "Progressing"
    assert deployment_health(None) == "Missing"


@pytest.mark.parametrize(
    ("conds", "health"),
    [
        ((("Available", "True", "MinimumReplicasAvailable"),), "Available"),
        ((("Available", "False", "MinimumReplicasUnavailable"),), "Progressing"),
        ((("Progressing", "False", "ProgressDeadlineExceeded"),), "Failed"),
        ((("Available", "True", "x"), ("ReplicaFailure", "True", "FailedCreate")), "Failed"),
        ((("Progressing", "True", "ReplicaSetUpdated"),), "Progressing"),
    ],
)
def test_deployment_health(conds: tuple[tuple[str, str, str], ...], health: str) -> None:
    assert deployment_health(dep(*conds)) == health


def test_stale_status_and_deleting() -> None:
    assert deployment_health(dep(("Available", "True", "x"), generation=2)) == "Progressing"
    deleting = dep(("Available", "True", "x"))
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert deployment_health(deleting) == "Deleting"
    failed = dep(("Progressing", "False", "ProgressDeadlineExceeded"))
    assert deployment_failure_message(failed) == "Progressing ProgressDeadlineExceeded"


def test_conditions_append_on_change_only_and_are_bounded() -> None:
    status: dict[str, Any] = {}
    assert append_service_condition(status, "Pending", "A", "m1", "t1")
    assert not append_service_condition(status, "Pending", "A", "m2", "t2")  # message updated only
    assert status["conditions"][-1]["message"] == "m2"
    assert status["conditions"][-1]["lastTransitionTime"] == "t1"
    for i in range(30):
        append_service_condition(
            status, "Running" if i % 2 else "Pending", "B", "", f"t{i}", limit=5
        )
    assert len(status["conditions"]) == 5


def test_finished_only_by_a_terminal_failure() -> None:
    def owner(*reasons: str) -> dict[str, Any]:
        return {"status": {"conditions": [
            {"type": "Failed", "status": "True", "reason": r} for r in reasons]}}  # fmt: skip

    assert not is_finished(owner())
    assert not is_finished(owner("InvalidSpec"))
    assert is_finished(owner("InvalidSpec", "workerFailed"))


def test_spec_hash_ignores_key_order() -> None:
    assert spec_hash({"a": 1, "b": [1, {"c": 2, "d": 3}]}) == spec_hash(
        {"b": [1, {"d": 3, "c": 2}], "a": 1}
    )
    assert spec_hash({"a": 1}) != spec_hash({"a": 2})


def test_controller_of() -> None:
    refs = [{"uid": "1"}, {"uid": "2", "controller": True}]
    assert controller_of({"metadata": {"ownerReferences": refs}}) == refs[1]
    assert controller_of({"metadata": {}}) is None


@pytest.mark.parametrize(
    ("hpa", "field"),
    [
        ("x", "h: expected an object"),
        ({}, "h.maxReplicas: missing"),
        ({"maxReplicas": 0}, "h.maxReplicas: must be at least 1"),
        ({"maxReplicas": True}, "h.maxReplicas: expected an integer"),
        ({"maxReplicas": 2, "minReplicas": 3}, "h.maxReplicas: must not be below minReplicas"),
        ({"maxReplicas": 2, "metrics": {}}, "h.metrics: expected a list"),
        ({"maxReplicas": 2, "metrics": [{}]}, "h.metrics[0].type: missing"),
        ({"maxReplicas": 2, "behavior": []}, "h.behavior: expected an object"),
    ],
)
def test_parse_hpa_names_the_field(hpa: Any, field: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_hpa(hpa, "h")
    assert str(err.value).startswith(field)


def test_parse_hpa_and_template_accept_good_input() -> None:
    assert parse_hpa(None, "h") is None
    assert parse_hpa({"maxReplicas": 2, "minReplicas": 2}, "h") == {
        "maxReplicas": 2,
        "minReplicas": 2,
    }
    t = {"spec": {"containers": [{"name": "c", "image": "i"}]}}
    assert parse_template(t, "t") is t


@pytest.mark.parametrize(
    ("template", "field"),
    [
        (None, "t: missing"),
        ({}, "t.spec: missing"),
        ({"spec": {"containers": []}}, "t.spec.containers: at least one"),
        ({"spec": {"containers": ["x"]}}, "t.spec.containers[0]: expected an object"),
        ({"spec": {"containers": [{"name": "c"}]}}, "t.spec.containers[0].image: missing"),
        ({"spec": {"containers": [{"image": "i"}], "nodeName": 1}}, "t.spec.nodeName"),
        ({"metadata": [], "spec": {"containers": [{"image": "i"}]}}, "t.metadata"),
    ],
)
def test_parse_template_names_the_field(template: Any, field: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_template(template, "t")
    assert str(err.value).startswith(field)


def test_report_metrics_as_sedna_converts_them() -> None:
    content = {
        "phase": "inference",
        "output": {"ownerInfo": {"startTime": "s", "updateTime": "u", "a": 1, "b": "x",
                                 "c": 0.5, "d": {"z": 1, "y": "<"}}},
    }  # fmt: skip
    assert metrics_from_report(content) == [
        {"key": "a", "value": "1"},
        {"key": "b", "value": "x"},
        {"key": "c", "value": "0.5"},
        {"key": "d", "value": '{"y":"\\u003c","z":1}'},
    ]
    assert metrics_from_report({"phase": "inference"}) is None
    assert metrics_from_report({"output": {}}) is None
    with pytest.raises(ReportError, match=r"content\.output\.ownerInfo"):
        metrics_from_report({"output": {"ownerInfo": {"k": "v" * 2000}}})


def test_edge_node_is_read_leniently() -> None:
    assert edge_node({}) == ""
    assert edge_node({"spec": {"edgeWorker": "x"}}) == ""
    ji = {"spec": {"edgeWorker": {"template": {"spec": {"nodeName": "n"}}}}}
    assert edge_node(ji) == "n"
