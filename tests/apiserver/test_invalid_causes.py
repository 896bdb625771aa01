"""422 Invalid in kube-apiserver's shape: each cause carries the field in `field` and
only the error body in `message`; the top-level message joins them once.

kubectl prints `* <field>: <message>` per cause, so a cause message that repeats the
path shows it twice (`* spec.dataset: spec.dataset: Required value`).
"""

from __future__ import annotations

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
from tests.apiserver.helpers import call

NS = "default"
IL_PATH = f"/apis/sedna.io/v1alpha1/namespaces/{NS}/incrementallearningjobs"


@pytest.fixture(scope="module")
def server() -> Iterator[APIServer]:
    srv = APIServer("127.0.0.1", 0)  # schema validation on, as the embedded mode runs
    srv.start()
    for crd in crd_manifests():
        srv.install_crd(crd)
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def client(server: APIServer) -> Iterator[kubernetes.client.ApiClient]:
    c = api_client_for(server)
    try:
        yield c
    finally:
        c.close()


def il_job(sample_dir: Path, name: str) -> dict[str, Any]:
    text = (sample_dir / "incrementallearningjob_v1alpha1.yaml").read_text()
    (doc,) = list(kube_yaml.load_all(text))
    job = dict(doc)
    job["metadata"] = {"name": name, "namespace": NS}
    return job


def test_schema_causes_hold_the_body_and_the_field_apart(
    client: kubernetes.client.ApiClient, sample_dir: Path
) -> None:
    job = il_job(sample_dir, "causes")
    del job["spec"]["dataset"]
    job["spec"]["outputDir"] = 7
    code, status = call(client, "POST", IL_PATH, job)
    assert code == 422, status
    causes = status["details"]["causes"]
    missing = {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.dataset"}
    assert missing in causes
    for cause in causes:
        assert cause["field"] and not cause["message"].startswith(cause["field"] + ":"), cause
    shown = ", ".join(f"{c['field']}: {c['message']}" for c in causes)
    assert status["message"] == f'IncrementalLearningJob.sedna.io "causes" is invalid: [{shown}]'
    assert "spec.dataset: Required value" in status["message"]


def test_a_single_schema_cause_is_not_bracketed(
    client: kubernetes.client.ApiClient, sample_dir: Path
) -> None:
    job = il_job(sample_dir, "single")
    del job["spec"]["dataset"]
    code, status = call(client, "POST", IL_PATH, job)
    assert code == 422, status
    assert status["details"]["causes"] == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.dataset"}
    ]
    assert status["message"] == (
        'IncrementalLearningJob.sedna.io "single" is invalid: spec.dataset: Required value'
    )


def test_built_in_kinds_causes_have_the_same_shape(client: kubernetes.client.ApiClient) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "typed"}, "data": 5}
    code, status = call(client, "POST", f"/api/v1/namespaces/{NS}/configmaps", cm)
    assert code == 422, status
    (cause,) = status["details"]["causes"]
    assert cause["field"] == "data" and cause["message"].startswith("Invalid value: 5"), cause
    assert status["message"] == f'ConfigMap "typed" is invalid: data: {cause["message"]}'


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_kubectl_prints_each_field_once(
    server: APIServer, sample_dir: Path, tmp_path: Path
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    server.write_kubeconfig(kubeconfig)
    sample = sample_dir / "objectsearchservice_v1alpha1.yaml"
    proc = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), "apply", "-n", NS, "-f", str(sample)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert proc.returncode != 0, proc.stdout
    assert "* spec.reidWorkers.selector: Required value" in proc.stderr, proc.stderr
    assert "spec.reidWorkers.selector: spec.reidWorkers.selector" not in proc.stderr
