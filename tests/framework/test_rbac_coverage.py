"""config/rbac.yaml grants what the GM really does: every informer it opens can list and
watch. A missing `watch` does not stop a GM from starting; its informer just fails and
retries forever, so this is checked against a running GM, not by reading the code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes
import sedna_dataset.plugin as ds_plugin
import sedna_incremental_learning.plugin as il_plugin
import yaml
from support.gm import GMHarness

RBAC = Path(__file__).resolve().parents[2] / "config" / "rbac.yaml"


def granted(kind: str) -> dict[tuple[str, str], set[str]]:
    """(apiGroup, resource) -> verbs, from the rules of every `kind` document."""
    verbs: dict[tuple[str, str], set[str]] = {}
    for doc in yaml.safe_load_all(RBAC.read_text()):
        if not doc or doc["kind"] != kind:
            continue
        for rule in doc["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    verbs.setdefault((group, resource), set()).update(rule["verbs"])
    return verbs


def allows(grants: dict[tuple[str, str], set[str]], group: str, resource: str, verb: str) -> bool:
    return any(
        verb in v or "*" in v
        for (g, r), v in grants.items()
        if g in (group, "*") and r in (resource, "*")
    )


def test_the_cluster_role_lets_the_gm_list_and_watch_all_it_informs(
    apiserver: Any, namespace: str
) -> None:
    def client() -> kubernetes.client.ApiClient:
        cfg = apiserver.client_configuration()
        return kubernetes.client.ApiClient(cfg)

    features = {il_plugin.FEATURE_NAME: il_plugin, ds_plugin.FEATURE_NAME: ds_plugin}
    gm = GMHarness(
        client,
        namespace,
        features={name: {"workers": 1} for name in features},
        plugins=features,
    ).start()
    try:
        assert gm.manager is not None
        informed = {
            (inf.resource.group, inf.resource.plural)
            for inf in gm.manager.container.informers().informers
        }
    finally:
        gm.stop()
    assert ("", "nodes") in informed  # the message layer forgets deleted nodes
    grants = granted("ClusterRole")
    missing = sorted(
        f"{group or 'core'}/{resource}: {verb}"
        for group, resource in informed
        for verb in ("list", "watch")
        if not allows(grants, group, resource, verb)
    )
    assert not missing, f"config/rbac.yaml does not grant {missing}"
