"""A JointInferenceService is sent to its LC again only when what the LC keeps of it
changes: never for a status write, not even at a periodic resync."""

from __future__ import annotations

from pathlib import Path

import yaml

from sedna.runtime import FakeClock

from .conftest import GMFactory, LCFactory
from .helpers import JIS, NODE, SAMPLE, Api, wait_until

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "joint-inference"
HEM = {"name": "IBT", "parameters": [{"key": "threshold_img", "value": "0.7"}]}


def test_status_changes_are_not_resent_even_at_a_resync_but_spec_changes_are(
    api: Api, make_gm: GMFactory, make_lc: LCFactory
) -> None:
    clock = FakeClock()
    gm = make_gm(clock=clock)
    lc = make_lc(gm, NODE)
    for name in ("01-models.yaml", "02-joint-inference-service.yaml"):
        for doc in yaml.safe_load_all((EXAMPLE / name).read_text()):
            if doc:
                doc["metadata"].pop("namespace", None)
                api.create(doc)
    lc.wait_for("insert")
    api.wait_condition("Pending")  # the GM's own status write: a status-only change
    assert gm.manager is not None
    informer = gm.manager.container.informers().informer(JIS)
    wait_until(lambda: (informer.lister.get(api.ns, SAMPLE) or {}).get("status"), 5.0, "status")

    # a periodic resync (the harness's period is an hour or two): the cache holds the
    # service with a status and a resourceVersion the LC was never sent
    resyncs = informer.stats.resyncs
    clock.step(2 * 3600 + 1)
    wait_until(lambda: informer.stats.resyncs > resyncs, 5.0, "a resync")

    # a spec change, delivered after the resync by the same informer thread: one insert
    api.jis.patch(api.ns, SAMPLE, {"spec": {"edgeWorker": {"hardExampleMining": HEM}}})
    changed = lc.wait_for("insert", pred=lambda m: m.payload["spec"]["edgeWorker"][
        "hardExampleMining"] == HEM)  # fmt: skip
    inserts = lc.messages("insert", SAMPLE)
    assert len(inserts) == 2, [m.payload["metadata"]["resourceVersion"] for m in inserts]
    assert inserts[-1] is changed
    assert "status" not in inserts[0].payload or not inserts[0].payload["status"]
