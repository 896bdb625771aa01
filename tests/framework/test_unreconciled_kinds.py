"""No kind is ignored in silence: each installed Sedna kind no enabled feature reconciles
gets one startup warning naming the plugin that would; `sedna-gm plugins` shows who does."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import kubernetes
import sedna_dataset.plugin as ds_plugin
from support.gm import GMHarness
from support.logs import capture_logs

from sedna.plugins.kinds import FIRST_PARTY
from sedna.runtime import KubeClient, sedna_resource
from sedna.runtime.kube import SEDNA_KINDS
from sedna.testing import api_client_for


def test_every_unreconciled_kind_is_warned_about_once(
    apiserver: Any, api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    kube = KubeClient(api_client)
    for plural, kind in SEDNA_KINDS.items():
        body = {
            "apiVersion": "sedna.io/v1alpha1",
            "kind": kind,
            "metadata": {"name": f"one-{plural}"},
            "spec": {},
        }
        kube.resource(sedna_resource(plural)).create(namespace, body)

    gm = GMHarness(
        lambda: api_client_for(apiserver),
        namespace,
        features={"dataset": {}},
        plugins={"dataset": ds_plugin},
    )
    for cap in capture_logs():
        gm.start()
        gm.stop()
        warnings = [line for line in cap.lines if "no enabled feature reconciles it" in line]
    expected = sorted(k for k, plugin in FIRST_PARTY.items() if plugin and k != "Dataset")
    warned = sorted(line.split("kind ")[1].split(" ")[0] for line in warnings)
    assert warned == expected  # once each; Dataset is reconciled, Model has no controller
    il = next(line for line in warnings if "kind IncrementalLearningJob " in line)
    assert (
        "(plugin incremental_learning would, but features.incremental_learning is disabled)" in il
    )
    reid = next(line for line in warnings if "kind ReidJob " in line)
    assert "plugin reid would" in reid


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
