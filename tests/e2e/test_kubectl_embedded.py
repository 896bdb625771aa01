"""kubectl against the embedded GM's API server: Debian's (kubernetes-client) and PATH's.

What the README promises after the first command: `kubectl --kubeconfig
.sedna-gm/kubeconfig get il,pods,events` shows the demo, and Sedna's own sample
resources can be applied, read back by short name and deleted. Each case runs once
per kubectl found: the one on PATH and Debian's 1.20 at
`.cache/kubectl-debian/usr/bin/kubectl` (`scripts/fetch_debian_kubectl.sh`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from .gm_process import PROJECT, GMProcess, write_config

DEBIAN_KUBECTL = PROJECT / ".cache" / "kubectl-debian" / "usr" / "bin" / "kubectl"
SAMPLES_NS = "sedna-samples"
SERVED = "sedna.io/v1alpha1"  # the only version of Sedna's CRDs (and ours)

Kubectl = Callable[..., str]


def _version(binary: str) -> str | None:
    try:
        proc = subprocess.run(
            [binary, "version", "--client", "-o", "json"],
            capture_output=True,
            text=True,
            timeout=30,
            env={**os.environ, "KUBECONFIG": os.devnull},
        )
        git = str(json.loads(proc.stdout)["clientVersion"]["gitVersion"])
    except (OSError, subprocess.SubprocessError, ValueError, KeyError, TypeError):
        return None
    m = re.match(r"v\d+\.\d+", git)
    return m.group(0) if m else git


def _kubectls() -> list[Any]:
    seen: set[str] = set()
    params = []
    for c in (shutil.which("kubectl"), str(DEBIAN_KUBECTL)):
        if not c or not os.access(c, os.X_OK) or os.path.realpath(c) in seen:
            continue
        seen.add(os.path.realpath(c))
        version = _version(c)
        if version is not None:
            params.append(pytest.param(c, id=f"kubectl-{version}"))
    if not params:
        reason = "kubectl not installed (Debian: apt-get install kubernetes-client)"
        return [pytest.param(None, marks=pytest.mark.skip(reason=reason))]
    return params


pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def gm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GMProcess]:
    proc = GMProcess(write_config(tmp_path_factory.mktemp("kubectl")))
    proc.start()
    try:
        proc.connect()
        yield proc
    finally:
        proc.stop()


@pytest.fixture(params=_kubectls())
def kubectl(request: pytest.FixtureRequest, gm: GMProcess, tmp_path: Path) -> Kubectl:
    binary = str(request.param)

    def run(*args: str, stdin: str | None = None) -> str:
        done = subprocess.run(
            [binary, "--kubeconfig", str(gm.kubeconfig), *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "HOME": str(tmp_path), "KUBECACHEDIR": str(tmp_path / "cache")},
        )
        assert done.returncode == 0, (
            f"`kubectl {' '.join(args)}` failed ({done.returncode}):\n{done.stderr}\n"
            f"GM log tail:\n{gm.tail(30)}"
        )
        return done.stdout

    return run


def test_get_shows_the_demo(gm: GMProcess, kubectl: Kubectl) -> None:
    gm.wait_for(
        lambda: "helmet-detection-demo-train-" in kubectl("get", "pods"),
        "a train pod in `kubectl get pods`",
        30,
    )
    # Events are written by the GM's recorder thread, and a Deploy replaces the inference
    # pod (delete, then create): wait for one listing that shows all three.
    wanted = (
        "incrementallearningjob.sedna.io/helmet-detection-demo",
        "pod/helmet-detection-demo-inference-",
        "incrementallearningjob/helmet-detection-demo",
    )

    def listing() -> str | None:
        text = kubectl("get", "il,pods,events")
        return text if all(w in text for w in wanted) else None

    out = gm.wait_for(listing, "the job, its inference pod and its events listed", 30)
    assert "incrementallearningjob.sedna.io/helmet-detection-demo" in out
    assert "pod/helmet-detection-demo-inference-" in out
    assert "incrementallearningjob/helmet-detection-demo" in out  # events name the job
    nodes = kubectl("get", "nodes")
    assert "edge-node" in nodes and "Ready" in nodes
    assert kubectl("get", "il", "helmet-detection-demo", "-o", "jsonpath={.kind}") == (
        "IncrementalLearningJob"
    )


def test_logs_of_a_finished_worker(gm: GMProcess, kubectl: Kubectl) -> None:
    """`kubectl logs` reaches the simulated kubelet's container log through the server."""

    def finished_train_pod() -> str | None:
        out = kubectl(
            "get", "pods", "-o", "name",
            "-l", "incrementallearningjob.sedna.io/worker-type=train",
            "--field-selector", "status.phase=Succeeded",
        )  # fmt: skip
        return out.split()[0] if out.strip() else None

    pod = gm.wait_for(finished_train_pod, "a finished train pod", 60)
    log = kubectl("logs", pod)
    assert "[simulated kubelet] container train-worker started" in log, log
    assert log.splitlines()[-1].endswith("container train-worker exited with code 0"), log
    assert kubectl("logs", pod, "--tail=1") == log.splitlines()[-1] + "\n"


Doc = dict[str, Any]


def _meta(doc: Doc, key: str) -> str:
    meta = doc.get("metadata")
    return str(meta.get(key) or "") if isinstance(meta, dict) else ""


def _samples(sedna_reference: Path) -> list[tuple[Path, list[Doc]]]:
    out = []
    for f in sorted((sedna_reference / "crd-samples").glob("*.yaml")):
        docs = [d for d in yaml.safe_load_all(f.read_text()) if d]
        if all(d.get("apiVersion") == SERVED for d in docs):
            out.append((f, docs))
    return out


def test_apply_get_delete_sednas_samples(kubectl: Kubectl, sedna_reference: Path) -> None:
    # Created declaratively, as the samples are (imperative creates are tested elsewhere).
    kubectl("apply", "-f", "-", stdin=f"apiVersion: v1\nkind: Namespace\n"
                                           f"metadata:\n  name: {SAMPLES_NS}\n")  # fmt: skip
    samples = _samples(sedna_reference)
    assert len(samples) >= 9

    def ns_args(docs: list[Doc]) -> list[str]:
        # Samples that name their namespace go there; the rest into a namespace of
        # their own (the IL sample's name is the demo's).
        return [] if any(_meta(d, "namespace") for d in docs) else ["-n", SAMPLES_NS]

    for f, docs in samples:
        out = kubectl("apply", *ns_args(docs), "-f", str(f))
        assert "created" in out or "configured" in out or "unchanged" in out, out
    # Applying again changes nothing (two FL samples share one name: they take turns).
    names = [(d["kind"], _meta(d, "name")) for _, ds in samples for d in ds]
    for f, docs in samples:
        if all(names.count((d["kind"], _meta(d, "name"))) == 1 for d in docs):
            assert "unchanged" in kubectl("apply", *ns_args(docs), "-f", str(f))

    listing = kubectl("get", "-A", "il,ji,fl,ll,objs,objt,datasets,models", "-o", "name")
    for f, docs in samples:
        for d in docs:
            kind, name = str(d["kind"]).lower(), _meta(d, "name")
            assert f"{kind}.sedna.io/{name}" in listing, f"{f.name}: {kind} {name} not listed"

    for f, docs in samples:
        out = kubectl("delete", "--ignore-not-found", *ns_args(docs), "-f", str(f))
        assert "deleted" in out or out == "", out
    left = kubectl("get", "-n", SAMPLES_NS, "il,fl,ll,datasets,models", "-o", "name")
    assert left.strip() == ""
    # The demo in `default` is untouched.
    assert "helmet-detection-demo" in kubectl("get", "il", "-n", "default", "-o", "name")


def test_get_ll_and_il_shows_both_demos(gm: GMProcess, kubectl: Kubectl) -> None:
    """The README's first command runs the lifelong-learning example beside the IL one."""

    def listing() -> str | None:
        text = kubectl("get", "ll,il")
        wanted = (
            "lifelonglearningjob.sedna.io/atcii-classifier-demo",
            "incrementallearningjob.sedna.io/helmet-detection-demo",
        )
        return text if all(w in text for w in wanted) else None

    gm.wait_for(listing, "both demo jobs in `kubectl get ll,il`", 30)
    assert kubectl("get", "ll", "atcii-classifier-demo", "-o", "jsonpath={.kind}") == (
        "LifelongLearningJob"
    )
    header = kubectl("get", "ll").splitlines()[0].split()
    assert header == ["NAME", "STAGE", "CONDITION", "MODELS", "AGE"]
