"""`sedna-gm --config config/gm.yaml` runs the multi-edge examples: every kind's
Deployments and pods appear (also through kubectl), jobs complete, worker reports reach
the status, and a restart creates nothing twice."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sedna.runtime import DEPLOYMENTS, PODS, SERVICES, sedna_resource
from sedna.runtime.kube import KubeClient

from .gm_process import GMProcess, write_config

pytestmark = pytest.mark.timeout(120)

EXPECTED_DEPLOYMENTS = {
    "pedestrian-search-deployment-reidworker",
    "pedestrian-search-deployment-userworker",
    "pedestrian-tracking-deployment-reidworker",
    "pedestrian-feature-extraction-deployment-fe",
}
EXPECTED_SERVICES = {
    "pedestrian-search-reidworker",
    "pedestrian-search-userworker",
    "pedestrian-tracking-reidworker",
    "pedestrian-feature-extraction-fe",
    "pedestrian-video-analytics-videoanalytics",
}
# pods of the examples: owner name prefix -> how many (Deployment replicas + bare pods)
EXPECTED_PODS = {
    "pedestrian-search-deployment-reidworker-": 2,
    "pedestrian-search-deployment-userworker-": 1,
    "pedestrian-search-trackingworker-": 2,
    "pedestrian-tracking-deployment-reidworker-": 2,
    "pedestrian-tracking-trackingworker-": 1,
    "pedestrian-feature-extraction-deployment-fe-": 2,
    "reid-job-reid-": 1,
    "pedestrian-video-analytics-videoanalytics-": 1,
}


@pytest.fixture(scope="module")
def gm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GMProcess]:
    proc = GMProcess(write_config(tmp_path_factory.mktemp("multiedge")))
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


def _names(kube: KubeClient, res: Any) -> list[str]:
    return sorted(o["metadata"]["name"] for o in kube.resource(res).list("default")["items"])


def _pod_counts(kube: KubeClient) -> dict[str, int]:
    counts = dict.fromkeys(EXPECTED_PODS, 0)
    for name in _names(kube, PODS):
        for prefix in counts:
            if name.startswith(prefix) and not any(
                p != prefix and name.startswith(p) and len(p) > len(prefix) for p in counts
            ):
                counts[prefix] += 1
    return counts


def _condition(kube: KubeClient, plural: str, name: str) -> str:
    obj = kube.resource(sedna_resource(plural)).get("default", name)
    conds = (obj.get("status") or {}).get("conditions") or []
    return str(conds[-1]["type"]) if conds else ""


def _wait_condition(gm: GMProcess, kube: KubeClient, plural: str, name: str, ctype: str) -> None:
    gm.wait_for(lambda: _condition(kube, plural, name) == ctype, f"{name} {ctype}", 30)


def test_every_example_runs_and_survives_a_restart(gm: GMProcess) -> None:
    kube = gm.connect()
    gm.wait_for(
        lambda: set(_names(kube, DEPLOYMENTS)) >= EXPECTED_DEPLOYMENTS, "the Deployments", 30
    )
    gm.wait_for(lambda: set(_names(kube, SERVICES)) >= EXPECTED_SERVICES, "the Services", 30)
    gm.wait_for(lambda: _pod_counts(kube) == EXPECTED_PODS, "the pods", 30)
    for plural, name, ctype in [
        ("objectsearchservices", "pedestrian-search", "Running"),
        ("objecttrackingservices", "pedestrian-tracking", "Running"),
        ("featureextractionservices", "pedestrian-feature-extraction", "Running"),
        ("reidjobs", "reid-job", "Completed"),
        ("videoanalyticsjobs", "pedestrian-video-analytics", "Completed"),
    ]:
        _wait_condition(gm, kube, plural, name, ctype)
    fe = sedna_resource("featureextractionservices")
    gm.wait_for(
        lambda: (kube.resource(fe).get("default", "pedestrian-feature-extraction")["status"]).get(
            "metrics"
        ),
        "the simulated worker's metrics",
        30,
    )
    kubectl = shutil.which("kubectl")
    if kubectl is not None:
        out = subprocess.run(
            [kubectl, "--kubeconfig", str(gm.kubeconfig), "get", "deployments,pods"],
            capture_output=True,
            text=True,
            timeout=60,
            env={"HOME": str(Path(gm.config).parent)},
            check=True,
        ).stdout
        assert "deployment.apps/pedestrian-search-deployment-userworker" in out
        assert "pod/pedestrian-tracking-trackingworker-" in out

    before = _names(kube, PODS)
    assert gm.stop() == 0
    gm.start()
    kube = gm.connect()
    gm.wait_for(
        lambda: _condition(kube, "objectsearchservices", "pedestrian-search") == "Running",
        "the service after the restart",
        30,
    )
    assert _pod_counts(kube) == EXPECTED_PODS
    assert _names(kube, PODS) == before
    assert set(_names(kube, DEPLOYMENTS)) >= EXPECTED_DEPLOYMENTS
