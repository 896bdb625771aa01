"""The FL feature declares exactly the API calls it makes (`Feature.access`), and
config/rbac.yaml grants them: a whole life (workers, heal, report, adoption, spec
change, S3 credentials, success) is recorded by the in-process server and compared."""

from __future__ import annotations

import base64
from pathlib import Path

import sedna_federated_learning.plugin as fl_plugin
from support.rbac import RbacRules, access_rules, describe, feature_calls, gm_calls

from sedna.embedded.apiserver import ApiCall, APIServer

from .conftest import GMFactory, LCFactory
from .helpers import JOB, NODES, WORKER, Api, env_of, sample_job, wait_until

CACHE_MISS_READS = {
    ("sedna.io", "models", "get"),
    ("sedna.io", "datasets", "get"),
    ("sedna.io", "federatedlearningjobs", "get"),
    ("", "services", "get"),  # a Service of the aggregator's name the cache did not have
}


def test_the_feature_declares_exactly_what_it_calls(
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    embedded_apiserver: APIServer,
    sample_dir: Path,
) -> None:
    job = sample_job(sample_dir)
    job["spec"]["transmitter"] = {"s3": {"aggDataPath": "s3://fl/agg", "credentialName": "s3"}}
    api.inputs(job)
    key = base64.b64encode(b"k").decode()
    api.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s3", "annotations": {"s3-endpoint": "minio:9000"}},
            "data": {"ACCESS_KEY_ID": key, "SECRET_ACCESS_KEY": key},
        }
    )
    gm = make_gm()
    lc = make_lc(gm, NODES[0])
    api.create(job)
    workers = api.wait_workers(3)
    assert env_of(workers["aggregation"])["TRANSMITTER"] == "s3"
    api.pods.delete(api.ns, workers["training-0"]["metadata"]["name"])  # healed
    wait_until(lambda: len(api.live_pods()) == 3 and "training-0" in api.workers())
    lc.report_round(api.ns, 1, {"accuracy": 0.5})
    wait_until(lambda: any(c["type"] == "Training" for c in api.conditions()))
    gm.stop()
    name = api.workers()["training-1"]["metadata"]["name"]
    api.pods.patch(api.ns, name, {"metadata": {"annotations": {WORKER: None}}})
    service = f"{JOB}-aggregation"  # as an older GM left it: without its spec hash
    api.services.patch(api.ns, service, {"metadata": {"annotations": None}})
    gm.start()  # adopts (patches) the unmarked pod, heals (updates) the Service
    wait_until(lambda: api.services.get(api.ns, service)["metadata"].get("annotations"))
    wait_until(lambda: WORKER in (api.pods.get(api.ns, name)["metadata"].get("annotations") or {}))
    api.fl.patch(api.ns, JOB, {"spec": {"pretrainedModel": {"name": ""}}})  # new generation
    wait_until(lambda: name not in {p["metadata"]["name"] for p in api.live_pods()})
    api.wait_workers(3)
    api.set_all("Succeeded")
    api.wait_phase("Succeeded")

    mine = feature_calls(c for c in gm_calls(embedded_apiserver) if c.namespace in (api.ns, None))
    assert ApiCall("update", "sedna.io", "federatedlearningjobs/status", api.ns) in mine
    undeclared = access_rules(fl_plugin.ACCESS).denied(mine)
    assert not undeclared, describe(undeclared)
    # and nothing is declared that a life does not use, but for the reads on a cache
    # miss (an input or job the informer has not delivered yet) and after a 409
    unused = [
        (a.group, r, v)
        for a in fl_plugin.ACCESS
        for r in a.resources
        for v in a.verbs
        if r != "events"
        and (a.group, r, v) not in CACHE_MISS_READS
        and not any(c.group == a.group and c.resource == r and c.verb == v for c in mine)
    ]
    assert not unused, unused
    assert not RbacRules.load().denied(mine)
