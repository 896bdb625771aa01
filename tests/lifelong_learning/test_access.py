"""The LL feature declares every API call it makes in a whole cycle, and the RBAC grants them."""

from __future__ import annotations

from pathlib import Path

import sedna_lifelong_learning.plugin as ll_plugin
from support.rbac import access_rules, denied_gm_calls, describe, feature_calls, gm_calls

from sedna.embedded.apiserver import ApiCall, APIServer

from .conftest import GMFactory, LCFactory
from .helpers import DS_NODE, Api, run_round, start_sample_job


def test_every_call_of_a_cycle_is_declared_and_granted(
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    embedded_apiserver: APIServer,
    sample_dir: Path,
) -> None:
    gm = make_gm()
    lc = make_lc(gm, DS_NODE)
    start_sample_job(api, sample_dir)
    for _ in range(2):  # the second Deploy deletes the first inference worker
        run_round(api, lc)
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
