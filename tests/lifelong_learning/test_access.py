"""The LL feature declares every API call it makes in a whole cycle, and the RBAC grants them."""

from __future__ import annotations

from pathlib import Path

import sedna_lifelong_learning.plugin as ll_plugin
from support.rbac import access_rules, denied_gm_calls, describe, feature_calls, gm_calls

from sedna.embedded.apiserver import ApiCall, APIServer

from .conftest import GMFactory, LCFactory
from .helpers import (
    DEPLOY_INPUT,
    DS_NODE,
    EVAL_INPUT,
    TRAIN_INPUT,
    TRAIN_OUTPUT,
    Api,
    run_stage,
    start_sample_job,
)


def test_every_call_of_a_cycle_is_declared_and_granted(
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    embedded_apiserver: APIServer,
    sedna_reference: Path,
) -> None:
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sedna_reference)
    for _ in range(2):  # the second Deploy deletes the first inference worker
        train = run_stage(api, lc, "train", TRAIN_INPUT)
        lc.report(api.ns, "train", "completed", output=TRAIN_OUTPUT)
        api.wait_latest("Eval/Waiting")
        api.set_phase(train["metadata"]["name"], "Succeeded")
        ev = run_stage(api, lc, "eval", EVAL_INPUT)
        api.set_phase_and_wait(ev["metadata"]["name"], "Succeeded", "Deploy/Waiting")
        lc.report(api.ns, "deploy", "ready", input=DEPLOY_INPUT)
        api.wait_latest("Train/Waiting")
    assert gm.controller.wait_idle(5.0)
    mine = {c for c in gm_calls(embedded_apiserver) if c.namespace == api.ns}
    for call in (
        ApiCall("create", "", "pods", api.ns),
        ApiCall("delete", "", "pods", api.ns),
        ApiCall("update", "sedna.io", "lifelonglearningjobs/status", api.ns),
        ApiCall("patch", "sedna.io", "lifelonglearningjobs", api.ns),
    ):
        assert call in mine, describe(mine)
    undeclared = access_rules(ll_plugin.ACCESS).denied(feature_calls(mine))
    assert not undeclared, describe(undeclared)
    denied = [c for c in denied_gm_calls(embedded_apiserver) if c.namespace == api.ns]
    assert not denied, describe(denied)
