"""No kind is ignored in silence, no choice is nagged about: an installed Sedna kind whose
plugin is missing gets one startup warning naming the plugin that would reconcile it; the
features the config leaves off are listed in one INFO line; `sedna-gm plugins` shows who
reconciles each kind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes
import sedna_dataset.plugin as ds_plugin
from dependency_injector import providers
from support.gm import GMHarness
from support.logs import capture_logs

from sedna.embedded.apiserver import APIServer
from sedna.plugins.kinds import (
    FIRST_PARTY,
    installed_kinds,
    installed_sedna_kinds,
    warn_unreconciled,
)
from sedna.plugins.loader import discover_plugins
from sedna.runtime import GMConfig, KubeClient, sedna_resource
from sedna.runtime.kube import SEDNA_KINDS
from sedna.testing import api_client_for


def _create_one_of_each_kind(kube: KubeClient, namespace: str) -> None:
    for plural, kind in SEDNA_KINDS.items():
        body = {
            "apiVersion": "sedna.io/v1alpha1",
            "kind": kind,
            "metadata": {"name": f"one-{plural}"},
            "spec": {},
        }
        kube.resource(sedna_resource(plural)).create(namespace, body)


def test_features_not_named_are_off_with_one_info_line_and_no_warning(
    apiserver: Any, api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    """A config naming one feature runs it alone; the others were left off on purpose."""
    _create_one_of_each_kind(KubeClient(api_client), namespace)
    gm = GMHarness(
        lambda: api_client_for(apiserver),
        namespace,
        features={"dataset": {}},
        plugins={"dataset": ds_plugin},
    )
    for cap in capture_logs():
        gm.start()
        assert gm.manager is not None
        running = [f.name for f in gm.manager.features]
        gm.stop()
        warnings = [line for line in cap.lines if "no enabled feature reconciles it" in line]
        left_off = [line for line in cap.lines if "left off by the config" in line]
    assert running == ["dataset"]
    assert warnings == []
    others = sorted(p.name for p in discover_plugins() if p.name != "dataset")
    assert len(left_off) == 1
    assert " | INFO " in left_off[0]
    assert left_off[0].rstrip().endswith(", ".join(others))


def test_unnamed_features_are_off_in_a_config_that_names_one() -> None:
    named = GMConfig.model_validate({"features": {"dataset": {}}})
    assert named.feature("dataset").enabled
    assert not named.feature("reid").enabled
    # naming none, or only switching some off, leaves every other installed feature on
    assert GMConfig.model_validate({}).feature("reid").enabled
    only_off = GMConfig.model_validate({"features": {"dataset": {"enabled": False}}})
    assert only_off.feature("reid").enabled
    assert not only_off.feature("dataset").enabled


def test_a_kind_whose_plugin_is_not_installed_is_warned_about_once(
    api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    kube = KubeClient(api_client)
    for cap in capture_logs():
        warned = warn_unreconciled(kube, ["Dataset"], ["dataset", "incremental_learning"])
        warnings = [line for line in cap.lines if "no enabled feature reconciles it" in line]
    # Dataset is reconciled, Model has no controller, incremental_learning is installed
    # (left off on purpose); every other kind's plugin is missing: a likely mistake
    expected = sorted(
        k
        for k, plugin in FIRST_PARTY.items()
        if plugin not in (None, "dataset", "incremental_learning")
    )
    assert sorted(warned) == expected
    assert len(warnings) == len(expected)
    reid = next(line for line in warnings if "kind ReidJob " in line)
    assert " | WARNING " in reid
    assert "(plugin reid would, but it is not installed)" in reid


def test_the_warnings_come_once_the_gm_has_started(
    apiserver: Any, api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    """Advice does not hold up readiness: the CRD list it reads comes after activation."""
    from sedna.manager import Manager

    config = GMConfig.model_validate(
        {
            "namespace": namespace,
            "websocket": {"address": "127.0.0.1", "port": 0, "auth": "none"},
            "metrics": {"enabled": False},
            "features": {"dataset": {}},
        }
    )
    # no entry points: no other plugin counts as installed, so every other kind warns
    manager = Manager(config, extra_plugins={"dataset": ds_plugin}, use_entry_points=False)
    manager.container.api_client.override(providers.Object(api_client_for(apiserver)))
    for cap in capture_logs():
        manager.start()
        manager.stop()
        started = [i for i, line in enumerate(cap.lines) if "sedna-gm started with" in line]
        warned = [i for i, line in enumerate(cap.lines) if "no enabled feature reconciles" in line]
    assert len(started) == 1
    assert warned
    assert started[0] < min(warned)


def test_cli_plugins_shows_which_feature_reconciles_each_kind() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "sedna.cli", "plugins"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    table = proc.stdout.split("\n\n")[1].splitlines()
    assert table[0].split() == ["KIND", "FEATURE", "NOTE"]
    rows = {line.split()[0]: line.split(None, 2)[1:] for line in table[1:]}
    assert sorted(rows) == sorted(SEDNA_KINDS.values())
    assert rows["IncrementalLearningJob"] == ["incremental_learning"]
    assert rows["Dataset"] == ["dataset"]
    assert rows["Model"] == ["-", "no controller: data read by the jobs that name it"]


def test_a_plugin_handed_to_the_manager_runs_unless_switched_off() -> None:
    """An embedding application's or test's own plugin was asked for: naming other
    features in the config does not leave it off, an explicit `enabled: false` does."""
    from sedna.plugins import load_plugins
    from sedna.runtime import Feature, hookimpl

    class Extra:
        @hookimpl
        def sedna_features(self) -> list[Feature]:
            return [Feature("extra", ["ReidJob"], lambda ctx: None)]  # type: ignore[arg-type,return-value]

    named = GMConfig.model_validate({"features": {"dataset": {}}})
    loaded = load_plugins(named, extra_plugins={"extra": Extra()})
    assert sorted(f.feature.name for f in loaded.features) == ["dataset", "extra"]
    assert "extra" not in loaded.left_off
    off = GMConfig.model_validate({"features": {"dataset": {}, "extra": {"enabled": False}}})
    loaded = load_plugins(off, extra_plugins={"extra": Extra()})
    assert [f.feature.name for f in loaded.features] == ["dataset"]
    assert "extra" in loaded.left_off


def test_sedna_kinds_are_read_from_the_crds_names(
    api_client: kubernetes.client.ApiClient,
) -> None:
    """The advice lists only the CRDs' metadata (their names), and finds what the whole
    CRDs say."""
    kube = KubeClient(api_client)
    whole = {k for k in installed_kinds(kube) if k.group == "sedna.io"}
    assert set(installed_sedna_kinds(kube)) == whole
    assert {k.kind for k in whole} == set(SEDNA_KINDS.values())


def test_a_sedna_plural_not_of_sedna_s_kinds_reads_the_whole_crds(tmp_path: Path) -> None:
    srv = APIServer("127.0.0.1", 0, schema_validation=False)
    srv.start()
    try:
        srv.install_crd(
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": "gadgets.sedna.io"},
                "spec": {
                    "group": "sedna.io",
                    "scope": "Namespaced",
                    "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                    "versions": [
                        {
                            "name": "v1alpha1",
                            "served": True,
                            "storage": True,
                            "schema": {"openAPIV3Schema": {"type": "object"}},
                        }
                    ],
                },
            }
        )
        kube = KubeClient(api_client_for(srv))
        assert [k.kind for k in installed_sedna_kinds(kube)] == ["Gadget"]
    finally:
        srv.stop()
