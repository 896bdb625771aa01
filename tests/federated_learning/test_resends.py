"""A FederatedLearningJob is sent to its LCs again only when what an LC keeps of it
changes: never for a status write, not even at a periodic resync."""

from __future__ import annotations

from pathlib import Path

import yaml

from sedna.runtime import FakeClock

from .conftest import GMFactory, LCFactory
from .helpers import FL_JOBS, JOB, Api, Received, wait_until

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "federated-learning"
NODE = "edge-node"  # the first training worker's node in the example


def test_status_changes_are_not_resent_even_at_a_resync_but_spec_changes_are(
    api: Api, make_gm: GMFactory, make_lc: LCFactory
) -> None:
    clock = FakeClock()
    gm = make_gm(clock=clock)
    lc = make_lc(gm, NODE)
    job = None
    for name in ("01-model.yaml", "02-datasets.yaml", "03-federated-learning-job.yaml"):
        for doc in yaml.safe_load_all((EXAMPLE / name).read_text()):
            if doc:
                api.create(doc)
                job = doc if doc["kind"] == "FederatedLearningJob" else job
    assert job is not None
    lc.wait_for("insert")
    assert gm.manager is not None
    informer = gm.manager.container.informers().informer(FL_JOBS)
    # the GM's own status write (phase, conditions): a status-only change
    wait_until(lambda: (informer.lister.get(api.ns, JOB) or {}).get("status"), 5.0, "status")

    resyncs = informer.stats.resyncs
    clock.step(2 * 3600 + 1)  # a periodic resync (the harness's period: one to two hours)
    wait_until(lambda: informer.stats.resyncs > resyncs, 5.0, "a resync")

    # a spec change, delivered after the resync by the same informer thread: one insert
    workers = job["spec"]["trainingWorkers"]
    workers[0]["template"]["spec"]["containers"][0]["env"].append({"name": "x", "value": "1"})
    api.fl.patch(api.ns, JOB, {"spec": {"trainingWorkers": workers}})

    def has_x(m: Received) -> bool:
        container = m.payload["spec"]["trainingWorkers"][0]["template"]["spec"]["containers"][0]
        return {"name": "x", "value": "1"} in container["env"]

    changed = lc.wait_for("insert", pred=has_x)
    inserts = lc.messages("insert", JOB)
    assert len(inserts) == 2, [m.payload["metadata"]["resourceVersion"] for m in inserts]
    assert inserts[-1] is changed
