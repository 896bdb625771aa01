"""kubectl against the server: discovery, short names, apply with OpenAPI validation,
describe, delete and server-side printing.

Every case runs once per kubectl found, because old clients ask differently (kubectl
1.20, Debian's ``kubernetes-client``, wants OpenAPI v2 as protobuf): the kubectl on
PATH, Debian's at ``.cache/kubectl-debian/usr/bin/kubectl`` (``scripts/
fetch_debian_kubectl.sh`` puts it there) and any listed in ``SEDNA_TEST_KUBECTLS``
(colon-separated paths). The test ids carry each kubectl's version.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEBIAN_KUBECTL = PROJECT_ROOT / ".cache" / "kubectl-debian" / "usr" / "bin" / "kubectl"

Kubectl = Callable[..., str]

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


def _client_version(binary: str) -> str | None:
    """``v1.32.4`` from ``kubectl version --client``, or None when it does not run."""
    try:
        proc = subprocess.run(
            [binary, "version", "--client", "-o", "json"],
            capture_output=True,
            text=True,
            timeout=30,
            env={**os.environ, "KUBECONFIG": os.devnull},
        )
        git = json.loads(proc.stdout)["clientVersion"]["gitVersion"]
    except (OSError, subprocess.SubprocessError, ValueError, KeyError, TypeError):
        return None
    m = re.match(r"v\d+\.\d+(\.\d+)?", str(git))
    return m.group(0) if m else str(git)


def find_kubectls() -> list[tuple[str, str]]:
    """(path, version) of every distinct, working kubectl: PATH, Debian's, the env list."""
    candidates = [shutil.which("kubectl"), str(DEBIAN_KUBECTL)]
    candidates += os.environ.get("SEDNA_TEST_KUBECTLS", "").split(":")
    seen: set[str] = set()
    out = []
    for c in candidates:
        if not c or not os.access(c, os.X_OK):
            continue
        real = os.path.realpath(c)
        if real in seen:
            continue
        seen.add(real)
        version = _client_version(c)
        if version is not None:
            out.append((c, version))
    return out


KUBECTLS = find_kubectls()


def _ids() -> list[Any]:
    if not KUBECTLS:
        return [pytest.param(None, marks=pytest.mark.skip(reason="no kubectl found"))]
    counts: dict[str, int] = {}
    params = []
    for path, version in KUBECTLS:
        n = counts[version] = counts.get(version, 0) + 1
        ident = f"kubectl-{version}" + (f"-{n}" if n > 1 else "")
        params.append(pytest.param(path, id=ident))
    return params


KUBECTL_PARAMS = _ids()


def make_runner(binary: str, cfg: Path, namespace: str, tmp_path: Path) -> Kubectl:
    """A ``kubectl(*args, stdin=None, check=True) -> stdout+stderr`` bound to one server."""

    def run(*args: str, stdin: str | None = None, check: bool = True) -> str:
        proc = subprocess.run(
            [binary, "--kubeconfig", str(cfg), "-n", namespace, *args],
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


def kubeconfig_for(apiserver: Any, tmp_path: Path) -> Path:
    """The real cluster's kubeconfig, or one written for the in-process server."""
    if os.environ.get("SEDNA_TEST_KUBECONFIG"):
        return Path(os.environ["SEDNA_TEST_KUBECONFIG"])
    cfg = tmp_path / "kubeconfig"
    apiserver.write_kubeconfig(cfg)
    return cfg


@pytest.fixture(params=KUBECTL_PARAMS)
def kubectl(request: pytest.FixtureRequest, apiserver: Any, tmp_path: Path, namespace: str) -> Any:
    binary = request.param
    assert binary is not None
    return make_runner(binary, kubeconfig_for(apiserver, tmp_path), namespace, tmp_path)


def test_pods_get_apply_describe_delete(kubectl: Kubectl, tmp_path: Path) -> None:
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


def test_sedna_samples(kubectl: Kubectl, sample_dir: Path, tmp_path: Path) -> None:
    text = (sample_dir / "incrementallearningjob_v1alpha1.yaml").read_text()
    f = tmp_path / "il.yaml"
    f.write_text(text.replace("namespace: default", ""))
    assert "created" in kubectl("apply", "-f", str(f))
    out = kubectl("get", "il")
    assert "helmet-detection-demo" in out
    assert "unchanged" in kubectl("apply", "-f", str(f))
    desc = kubectl("describe", "il")
    assert "IncrementalLearningJob" in desc
    model = (sample_dir / "model_v1alpha1.yaml").read_text()
    g = tmp_path / "model.yaml"
    g.write_text(model.replace("namespace: default", ""))
    kubectl("apply", "-f", str(g))
    assert "sedna.io" in kubectl("get", "models.sedna.io", "-o", "name")
    assert "deleted" in kubectl("delete", "-f", str(f))
    assert "No resources found" in kubectl("get", "il")


def test_all_sedna_samples(kubectl: Kubectl, sample_dir: Path, tmp_path: Path) -> None:
    """Every sample of the reference applies, lists, describes and deletes as a directory."""
    samples = tmp_path / "samples"
    samples.mkdir()
    names = {}
    for src in sorted((sample_dir).glob("*.yaml")):
        text = src.read_text().replace("namespace: default", "")
        (samples / src.name).write_text(text)
        kind_m = re.search(r"^kind:\s*(\S+)", text, re.M)
        name_m = re.search(r"^  name:\s*\"?([^\"\s]+)", text, re.M)
        assert kind_m and name_m, src
        names[name_m.group(1)] = kind_m.group(1)
    out = kubectl("apply", "-f", str(samples))
    for name in names:
        assert name in out
    kinds = ",".join(sorted({k.lower() + ".sedna.io" for k in names.values()}))
    listed = kubectl("get", kinds)
    for name in names:
        assert name in listed
    assert "Kind:" in kubectl("describe", "jointinferenceservices")
    assert "deleted" in kubectl("delete", "-f", str(samples), "--ignore-not-found")
    assert "No resources found" in kubectl("get", kinds)


def test_unknown_resource_type(kubectl: Kubectl) -> None:
    out = kubectl("get", "frobnicators", check=False)
    assert "the server doesn't have a resource type" in out
