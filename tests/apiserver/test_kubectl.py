"""kubectl (v1.32) against the server: discovery, short names, apply with OpenAPI
validation, describe, delete."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on PATH")

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: c
    image: nginx
    env:
    - {name: A, value: "1"}
"""


@pytest.fixture()
def kubectl(apiserver: Any, tmp_path: Path, namespace: str) -> Any:
    if os.environ.get("SEDNA_TEST_KUBECONFIG"):
        cfg = Path(os.environ["SEDNA_TEST_KUBECONFIG"])
    else:
        cfg = tmp_path / "kubeconfig"
        apiserver.write_kubeconfig(cfg)

    def run(*args: str, stdin: str | None = None, check: bool = True) -> str:
        assert KUBECTL is not None
        proc = subprocess.run(
            [KUBECTL, "--kubeconfig", str(cfg), "-n", namespace, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "KUBECACHEDIR": str(tmp_path / "cache"), "HOME": str(tmp_path)},
        )
        if check:
            assert proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stderr}"
        return proc.stdout + proc.stderr

    return run


def test_pods_get_apply_describe_delete(kubectl: Any, tmp_path: Path) -> None:
    f = tmp_path / "pod.yaml"
    f.write_text(POD)
    assert "pod/web created" in kubectl("apply", "-f", str(f))
    assert "web" in kubectl("get", "pods")
    assert "unchanged" in kubectl("apply", "-f", str(f))
    f.write_text(POD.replace("app: web", "app: web2").replace('value: "1"', 'value: "2"'))
    assert "configured" in kubectl("apply", "-f", str(f))
    out = kubectl(
        "get",
        "pod",
        "web",
        "-o",
        "jsonpath={.metadata.labels.app} {.spec.containers[0].env[0].value}",
    )
    assert out.strip() == "web2 2"
    desc = kubectl("describe", "pod", "web")
    assert "Name:" in desc and "web" in desc and "nginx" in desc
    assert "deleted" in kubectl("delete", "-f", str(f))
    assert "web" not in kubectl("get", "pods")


def test_sedna_samples(kubectl: Any, sedna_reference: Path, tmp_path: Path) -> None:
    text = (sedna_reference / "crd-samples" / "incrementallearningjob_v1alpha1.yaml").read_text()
    f = tmp_path / "il.yaml"
    f.write_text(text.replace("namespace: default", ""))
    assert "created" in kubectl("apply", "-f", str(f))
    out = kubectl("get", "il")
    assert "helmet-detection-demo" in out or len(out.splitlines()) >= 2
    assert "unchanged" in kubectl("apply", "-f", str(f))
    desc = kubectl("describe", "il")
    assert "IncrementalLearningJob" in desc
    model = (sedna_reference / "crd-samples" / "model_v1alpha1.yaml").read_text()
    g = tmp_path / "model.yaml"
    g.write_text(model.replace("namespace: default", ""))
    kubectl("apply", "-f", str(g))
    assert "sedna.io" in kubectl("get", "models.sedna.io", "-o", "name")
    assert "deleted" in kubectl("delete", "-f", str(f))
    assert "No resources found" in kubectl("get", "il")


def test_unknown_resource_type(kubectl: Any) -> None:
    out = kubectl("get", "frobnicators", check=False)
    assert "the server doesn't have a resource type" in out
