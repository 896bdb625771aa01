"""The embedded API server checks custom resources against Sedna's schemas, as kube does.

A server of its own, with validation on and the project's CRDs (`sedna-gm crds`).
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from sedna.embedded import kube_yaml
from sedna.embedded.apiserver import APIServer
from sedna.embedded.crds import crd_manifests
from sedna.testing import api_client_for
from tests.apiserver.helpers import call as raw_call

ApiClient = kubernetes.client.ApiClient
NS = "default"
IL_PATH = f"/apis/sedna.io/v1alpha1/namespaces/{NS}/incrementallearningjobs"


@pytest.fixture(scope="module")
def server() -> Iterator[APIServer]:
    srv = APIServer("127.0.0.1", 0)
    srv.start()
    for crd in crd_manifests():
        srv.install_crd(crd)
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def client(server: APIServer) -> Iterator[ApiClient]:
    c = api_client_for(server)
    try:
        yield c
    finally:
        c.close()


def sample(sample_dir: Path, file: str) -> dict[str, Any]:
    (doc,) = [d for d in kube_yaml.load_all((sample_dir / file).read_text())]
    return dict(doc)


def call(
    client: ApiClient, method: str, path: str, body: Any = None, query: Any = None
) -> tuple[int, Any]:
    return raw_call(client, method, path, body, query=query)


def il(sample_dir: Path, name: str) -> dict[str, Any]:
    job = sample(sample_dir, "incrementallearningjob_v1alpha1.yaml")
    job["metadata"] = {"name": name, "namespace": NS}
    return job


def test_sednas_il_sample_is_accepted_with_its_timer_strings(
    client: ApiClient, sample_dir: Path
) -> None:
    code, job = call(client, "POST", IL_PATH, il(sample_dir, "ok"))
    assert code == 201, job
    assert job["spec"]["trainSpec"]["trigger"]["timer"] == {"start": "02:00", "end": "24:00"}


def test_an_unknown_field_is_pruned_by_default(client: ApiClient, sample_dir: Path) -> None:
    body = il(sample_dir, "pruned")
    body["spec"]["datasett"] = {"name": "typo"}
    body["spec"]["trainSpec"]["template"]["metadata"] = {"labels": {"app": "kept"}}
    code, job = call(client, "POST", IL_PATH, body)
    assert code == 201, job
    assert "datasett" not in job["spec"]
    # A pod template's metadata is kept (kube would prune it: see schema_validation).
    assert job["spec"]["trainSpec"]["template"]["metadata"] == {"labels": {"app": "kept"}}


def test_an_unknown_field_is_refused_with_strict_field_validation(
    client: ApiClient, sample_dir: Path
) -> None:
    body = il(sample_dir, "strict")
    body["spec"]["datasett"] = {"name": "typo"}
    body["spec"]["dataset"]["trainprob"] = 0.5
    code, status = call(client, "POST", IL_PATH, body, [("fieldValidation", "Strict")])
    assert code == 400, status
    assert status["reason"] == "BadRequest"
    assert status["message"] == (
        'IncrementalLearningJob in version "v1alpha1" cannot be handled as a '
        'IncrementalLearningJob: strict decoding error: unknown field "spec.dataset.trainprob", '
        'unknown field "spec.datasett"'
    )


def test_a_mistyped_field_is_a_422_in_kubes_words(client: ApiClient, sample_dir: Path) -> None:
    body = il(sample_dir, "typed")
    body["spec"]["dataset"]["trainProb"] = "most"
    code, status = call(client, "POST", IL_PATH, body)
    assert code == 422, status
    assert status["reason"] == "Invalid"
    assert status["message"] == (
        'IncrementalLearningJob.sedna.io "typed" is invalid: spec.dataset.trainProb: Invalid '
        'value: "string": spec.dataset.trainProb in body must be of type number: "most"'
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueTypeInvalid",
            "message": 'Invalid value: "string": spec.dataset.trainProb '
            'in body must be of type number: "most"',
            "field": "spec.dataset.trainProb",
        }
    ]


def test_missing_required_fields_are_listed(client: ApiClient, sample_dir: Path) -> None:
    body = il(sample_dir, "required")
    del body["spec"]["dataset"]["name"]
    del body["spec"]["outputDir"]
    code, status = call(client, "POST", IL_PATH, body)
    assert code == 422, status
    assert status["message"] == (
        'IncrementalLearningJob.sedna.io "required" is invalid: '
        "[spec.dataset.name: Required value, spec.outputDir: Required value]"
    )
    assert [c["reason"] for c in status["details"]["causes"]] == ["FieldValueRequired"] * 2


def test_int_or_string_enum_and_minimum(client: ApiClient, sample_dir: Path) -> None:
    body = il(sample_dir, "ports")
    container = body["spec"]["trainSpec"]["template"]["spec"]["containers"][0]
    container["ports"] = [{"containerPort": 80, "protocol": "TCP"}]
    container["livenessProbe"] = {"httpGet": {"port": "http"}}
    code, job = call(client, "POST", IL_PATH, body)
    assert code == 201, job
    bad = copy.deepcopy(body)
    bad["metadata"]["name"] = "ports-bad"
    bad_container = bad["spec"]["trainSpec"]["template"]["spec"]["containers"][0]
    bad_container["livenessProbe"] = {"httpGet": {"port": 1.5}}
    code, status = call(client, "POST", IL_PATH, bad)
    assert code == 422, status
    field = "spec.trainSpec.template.spec.containers[0].livenessProbe.httpGet.port"
    assert status["details"]["causes"][0]["field"] == field
    assert "must be of type integer,string" in status["message"]


def test_updates_and_status_writes_are_checked_too(client: ApiClient, sample_dir: Path) -> None:
    code, job = call(client, "POST", IL_PATH, il(sample_dir, "upd"))
    assert code == 201, job
    job["spec"]["dataset"]["trainProb"] = True
    code, status = call(client, "PUT", f"{IL_PATH}/upd", job)
    assert code == 422 and "spec.dataset.trainProb" in status["message"], status
    code, job = call(client, "GET", f"{IL_PATH}/upd")
    job["status"] = {"conditions": [{"type": "Running", "status": "True", "stage": 7}]}
    code, status = call(client, "PUT", f"{IL_PATH}/upd/status", job)
    assert code == 422, status
    assert status["details"]["causes"][0]["field"] == "status.conditions[0].stage"
    job["status"] = {
        "conditions": [{"type": "Running", "status": "True", "stage": "Train", "extra": 1}]
    }
    code, stored = call(client, "PUT", f"{IL_PATH}/upd/status", job)
    assert code == 200, stored
    assert stored["status"]["conditions"] == [
        {"type": "Running", "status": "True", "stage": "Train"}
    ]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_kubectl_apply_of_a_misspelt_field_is_refused(
    server: APIServer, sample_dir: Path, tmp_path: Path
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    server.write_kubeconfig(kubeconfig)
    body = il(sample_dir, "kubectl-typo")
    body["spec"]["evalSpec"]["templat"] = {}
    manifest = tmp_path / "il.json"
    manifest.write_text(json.dumps(body))
    proc = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), "apply", "-f", str(manifest)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0
    assert 'strict decoding error: unknown field "spec.evalSpec.templat"' in proc.stderr


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
@pytest.mark.parametrize(
    "file", ["objectsearchservice_v1alpha1.yaml", "objecttrackingservice_v1alpha1.yaml"]
)
def test_sednas_samples_that_its_schema_refuses_are_refused(
    server: APIServer, sample_dir: Path, tmp_path: Path, file: str
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    server.write_kubeconfig(kubeconfig)
    proc = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), "apply", "-n", NS, "-f",
         str(sample_dir / file)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode != 0, proc.stdout
    assert "is invalid" in proc.stderr
    assert "spec.reidWorkers.selector: Required value" in proc.stderr
    assert "env[0].value in body must be of type string" in proc.stderr


def test_printer_columns_of_the_project_crds(client: ApiClient, sample_dir: Path) -> None:
    from tests.apiserver.test_tables import cells, column_names, get_raw

    ds = sample(sample_dir, "dataset_v1alpha1.yaml")
    ds["metadata"] = {"name": "cols", "namespace": NS}
    path = f"/apis/sedna.io/v1alpha1/namespaces/{NS}/datasets"
    code, created = call(client, "POST", path, ds)
    assert code == 201, created
    created["status"] = {"numberOfSamples": 56}
    code, _ = call(client, "PUT", f"{path}/cols/status", created)
    assert code == 200
    status, _, table = get_raw(client, path)
    assert status == 200
    assert column_names(table) == ["Name", "Node", "Format", "Samples", "Age"]
    row = cells(table)
    assert (row["Node"], row["Format"], row["Samples"]) == (
        ds["spec"]["nodeName"],
        ds["spec"]["format"],
        56,
    )
    status, _, table = get_raw(
        client, f"/apis/sedna.io/v1alpha1/namespaces/{NS}/jointinferenceservices"
    )
    assert column_names(table) == ["Name", "Condition", "Active", "Failed", "Age"]
    status, _, table = get_raw(
        client, f"/apis/sedna.io/v1alpha1/namespaces/{NS}/federatedlearningjobs"
    )
    assert column_names(table) == ["Name", "Phase", "Condition", "Active", "Failed", "Age"]


@pytest.mark.parametrize(("mode", "warned"), [(None, True), ("Warn", True), ("Ignore", False)])
def test_a_pruned_field_is_a_warning_header_unless_ignored(
    client: ApiClient, sample_dir: Path, mode: str | None, warned: bool
) -> None:
    body = il(sample_dir, f"warn-{(mode or 'default').lower()}")
    body["spec"]["datasett"] = {}
    query = [("fieldValidation", mode)] if mode else []
    params = client.param_serialize(
        "POST", IL_PATH, query_params=query, body=body,
        header_params={"Content-Type": "application/json", "Accept": "application/json"},
    )  # fmt: skip
    resp = client.call_api(*params)
    resp.read()
    assert resp.status == 201
    warning = resp.getheader("Warning")
    if warned:
        assert warning == '299 - "unknown field \\"spec.datasett\\""'
    else:
        assert warning is None
