"""The Dataset feature declares every API call it makes (`Feature.access`)."""

from __future__ import annotations

from pathlib import Path

import sedna_dataset.plugin as ds_plugin
from support.rbac import access_rules, describe, feature_calls, gm_calls

from sedna.embedded.apiserver import ApiCall, APIServer

from .conftest import GMFactory, LCFactory
from .helpers import SAMPLE_NODE, Api, deliver_sample, wait_until


def test_the_feature_declares_what_it_calls(
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    embedded_apiserver: APIServer,
    sample_dir: Path,
) -> None:
    gm = make_gm()
    lc = make_lc(gm, SAMPLE_NODE)
    deliver_sample(api, lc, sample_dir)
    lc.report(api.ns, {"numberOfSamples": 7})
    wait_until(lambda: api.status().get("numberOfSamples") == 7)
    mine = {c for c in gm_calls(embedded_apiserver) if c.namespace == api.ns}
    assert ApiCall("update", "sedna.io", "datasets/status", api.ns) in mine
    undeclared = access_rules(ds_plugin.ACCESS).denied(feature_calls(mine))
    assert not undeclared, describe(undeclared)
