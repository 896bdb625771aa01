"""Every FederatedLearningJob sample of Sedna (all three are `sedna.io/v1alpha1`, the only
version the CRD serves) is accepted and reconciled into its workers."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from .conftest import GMFactory, LCFactory
from .helpers import Api, env_of, sample_job, wait_until

SAMPLES = {
    "federatedlearningjob_v1alpha1.yaml": ("surface-defect-detection", {"edge1", "edge2"}),
    "federatedlearningjob_v1alpha2.yaml": ("surface-defect-detection", {"edge-node"}),
    "federatedlearningjob_yolo_v1alpha1.yaml": ("yolo-v5", {"edge-node"}),
}


def _secret(name: str) -> dict[str, object]:
    def b64(s: str) -> str:
        return base64.b64encode(s.encode()).decode()

    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "annotations": {"s3-endpoint": "minio.example:9000"}},
        "data": {"ACCESS_KEY_ID": b64("AKID"), "SECRET_ACCESS_KEY": b64("s3cr3t")},
    }


def test_the_crd_serves_only_v1alpha1(sedna_reference: Path) -> None:
    import yaml

    crd = yaml.safe_load(
        (sedna_reference / "crds" / "sedna.io_federatedlearningjobs.yaml").read_text()
    )
    assert [v["name"] for v in crd["spec"]["versions"] if v["served"]] == ["v1alpha1"]
    for file in SAMPLES:
        job = sample_job(sedna_reference / "crd-samples", file)
        assert job["apiVersion"] == "sedna.io/v1alpha1"


@pytest.mark.parametrize("file", sorted(SAMPLES))
def test_every_sedna_sample_is_reconciled(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path, file: str
) -> None:
    name, nodes = SAMPLES[file]
    job = sample_job(sample_dir, file)
    api.inputs(job)
    api.create(_secret("mysecret"))
    gm = make_gm()
    lcs = {n: make_lc(gm, n) for n in nodes}
    api.create(job)
    for lc in lcs.values():
        lc.wait_for("insert", name=name)
    wait_until(lambda: len(api.live_pods(name)) == 3, what=f"pods of {name}")
    api.wait_phase("Pending", name)
    workers = api.workers(name)
    train = env_of(workers["training-1"])
    assert train["PARTICIPANTS_COUNT"] == "2"
    assert train["AGG_IP"] == f"{name}-aggregation.{api.ns}"
    if "yolo" in file:
        agg = workers["aggregation"]
        env = env_of(agg)
        assert env["TRANSMITTER"] == "s3"
        assert env["AGG_DATA_PATH"] == "s3://sedna/fl/aggregation_data"
        assert env["PRETRAINED_MODEL_URL"] == "/home/data/pretrained"
        refs = {
            e["name"]: e["valueFrom"]["secretKeyRef"]["name"]
            for e in agg["spec"]["containers"][0]["env"]
            if "valueFrom" in e
        }
        assert refs["ACCESS_KEY_ID"] == "mysecret"
        assert train["TRANSMITTER"] == "s3"
    else:
        assert train["TRANSMITTER"] == "ws"
