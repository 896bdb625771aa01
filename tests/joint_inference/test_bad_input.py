"""Malformed services get an Event and a condition naming the field; malformed LC reports
are rejected with a log line naming node, kind and name, and nothing else is disturbed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.deployments import DeploymentControllerFactory
from support.logs import LogCapture

from .conftest import GMFactory, LCFactory
from .helpers import (
    CLOUD_DEPLOYMENT,
    NODE,
    SAMPLE,
    Api,
    sample_service,
    wait_until,
    worker_report,
)


def invalid(api: Api, field: str, name: str = SAMPLE) -> str:
    """Wait for the InvalidSpec condition and Event; both must name `field`."""
    wait_until(lambda: api.latest(name) == ("Failed", "InvalidSpec"), 10.0, f"InvalidSpec {field}")
    cond = api.status(name)["conditions"][-1]
    assert cond["message"].startswith(f"{field}: "), cond["message"]
    event = api.wait_event("InvalidSpec", field, name)
    assert event.startswith(field)
    return str(cond["message"])


def _set(obj: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for key in parents:
        obj = obj[key]
    if value is _DELETE:
        del obj[last]
    else:
        obj[last] = value


_DELETE = object()

CASES = [
    ("spec.edgeWorker", _DELETE, "spec.edgeWorker", "missing"),
    ("spec.cloudWorker", _DELETE, "spec.cloudWorker", "missing"),
    ("spec.cloudWorker.model.name", "", "spec.cloudWorker.model.name", "missing"),
    (
        "spec.edgeWorker.hardExampleMining.name",
        7,
        "spec.edgeWorker.hardExampleMining.name",
        "expected a string",
    ),
    (
        "spec.edgeWorker.hardExampleMining.parameters",
        [{"key": "a", "value": 1}],
        "spec.edgeWorker.hardExampleMining.parameters[0].value",
        "expected a string",
    ),
    (
        "spec.edgeWorker.template.spec.containers",
        [],
        "spec.edgeWorker.template.spec.containers",
        "at least one container",
    ),
    (
        "spec.cloudWorker.hpa",
        {"minReplicas": 3, "maxReplicas": 2},
        "spec.cloudWorker.hpa.maxReplicas",
        "must not be below minReplicas",
    ),
    (
        "spec.edgeWorker.hpa",
        {"maxReplicas": "two"},
        "spec.edgeWorker.hpa.maxReplicas",
        "expected an integer",
    ),
    ("spec.edgeWorker.hpa", {"minReplicas": 1}, "spec.edgeWorker.hpa.maxReplicas", "missing"),
]


@pytest.mark.parametrize(("path", "value", "field", "reason"), CASES, ids=[c[2] for c in CASES])
def test_malformed_spec_is_named_and_creates_nothing(
    api: Api,
    make_gm: GMFactory,
    sample_dir: Path,
    path: str,
    value: Any,
    field: str,
    reason: str,
) -> None:
    make_gm()
    api.create_models()
    ji = sample_service(sample_dir)
    _set(ji, path, value)
    try:
        api.create(ji)
    except Exception as exc:  # a server enforcing the CRD schema refuses it: also an answer
        pytest.skip(f"the server rejects this spec itself: {exc}")
    message = invalid(api, field)
    assert reason in message
    assert api.names("deployments") == [] and api.names("services") == []


def test_a_list_valued_env_value_is_named_as_the_other_kinds_do(
    api: Api, make_gm: GMFactory, sample_dir: Path
) -> None:
    """As for the multi-edge kinds (Sedna's own samples have such values): an Event and a
    condition name the env entry, instead of a create the API server refuses."""
    make_gm()
    api.create_models()
    ji = sample_service(sample_dir)
    container = ji["spec"]["edgeWorker"]["template"]["spec"]["containers"][0]
    env = container.setdefault("env", [])
    env.append({"name": "input_shape", "value": [416, 736]})
    field = f"spec.edgeWorker.template.spec.containers[0].env[{len(env) - 1}].value"
    try:
        api.create(ji)
    except Exception as exc:  # a server enforcing the pod schema refuses it: also an answer
        pytest.skip(f"the server rejects this spec itself: {exc}")
    message = invalid(api, field)
    assert "must be a string" in message
    assert api.names("deployments") == [] and api.names("services") == []


def test_an_invalid_spec_is_cured_by_an_edit(
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    deployment_controller: DeploymentControllerFactory,
    sample_dir: Path,
) -> None:
    deployment_controller()
    make_gm()
    api.create_models()
    ji = sample_service(sample_dir)
    ji["spec"]["cloudWorker"]["hpa"] = {"minReplicas": 3, "maxReplicas": 2}
    api.create(ji)
    invalid(api, "spec.cloudWorker.hpa.maxReplicas")
    api.patch_spec({"cloudWorker": {"hpa": {"maxReplicas": 4}}})
    api.until_running()
    assert api.condition_types() == ["Failed", "Pending", "Running"]


def test_a_name_taken_by_a_foreign_deployment_is_reported_not_touched(
    api: Api, make_gm: GMFactory, sample_dir: Path
) -> None:
    foreign = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": CLOUD_DEPLOYMENT},
        "spec": {
            "selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "x"}},
                         "spec": {"containers": [{"name": "c", "image": "mine"}]}},
        },
    }  # fmt: skip
    api.deployments.create(api.ns, foreign)
    make_gm()
    api.create_models()
    api.create(sample_service(sample_dir))
    wait_until(lambda: api.latest() == ("Failed", "InvalidSpec"), 10.0, "conflict condition")
    assert "is not controlled by this object" in api.status()["conditions"][-1]["message"]
    api.wait_event("NameConflict", CLOUD_DEPLOYMENT)
    mine = api.deployments.get(api.ns, CLOUD_DEPLOYMENT)
    assert mine["spec"]["template"]["spec"]["containers"][0]["image"] == "mine"
    assert "ownerReferences" not in mine["metadata"]


def test_no_edge_node_gets_a_warning_naming_the_field(
    api: Api, make_gm: GMFactory, sample_dir: Path
) -> None:
    make_gm()
    api.create_models()
    ji = sample_service(sample_dir)
    del ji["spec"]["edgeWorker"]["template"]["spec"]["nodeName"]
    api.create(ji)
    api.wait_event("MissingNodeName", "spec.edgeWorker.template.spec.nodeName")


BAD_REPORTS = [
    ("output not an object", {"output": "x"}, "content.output: expected an object"),
    ("ownerInfo a list", {"output": {"ownerInfo": [1]}}, "content.output.ownerInfo"),
    ("phase a number", {"phase": 3}, "content.phase"),
    (
        "too many metrics",
        {"output": {"ownerInfo": {f"k{i}": i for i in range(100)}}},
        "more than 64",
    ),
]


def test_malformed_reports_are_rejected_and_the_next_good_one_lands(
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    logs: LogCapture,
    sample_dir: Path,
) -> None:
    # the handler's own checks: the message layer would refuse other-node's report first
    gm = make_gm(websocket={"authorizeReports": False})
    lc = make_lc(gm, NODE)
    other = make_lc(gm, "other-node")
    api.create_models()
    api.create(sample_service(sample_dir))
    lc.wait_for("insert")
    where = f"report from node {NODE} for JointInferenceService {api.ns}/{SAMPLE}"
    lc.report(api.ns, ["not an object"])  # the message layer's own check
    logs.wait(f"rejected a message from node {NODE}", f"name={SAMPLE}")
    for _what, payload, text in BAD_REPORTS:
        lc.report(api.ns, payload)
        logs.wait(where, "invalid report", text)
        api.wait_event("InvalidReport", text)
    other.report(api.ns, worker_report(5, 1))
    logs.wait(f"report from node other-node for JointInferenceService {api.ns}/{SAMPLE}",
              "report ignored")  # fmt: skip
    lc.report(api.ns, {"phase": "inference", "status": ""})
    logs.wait(where, "empty status info")
    lc.report(api.ns, worker_report(10, 2))
    wait_until(lambda: api.status().get("metrics"), 5.0, "metrics")
    assert {"key": "inferenceNumber", "value": "10"} in api.status()["metrics"]
