"""`sedna-gm token create NODE`: issue the LC token of one node, kept in a Secret per node.

With `websocket.auth: node` the GM accepts a node's LC only with the token in Secret
`<nodeTokenNamespace>/sedna-lc-token-<node>` (label `sedna.io/lc-node=<node>`), so a
token proves one node and nothing else. Running the command again rotates the token:
the new one is valid at once, the old one no longer.
"""

from __future__ import annotations

import base64
import secrets
from pathlib import Path
from typing import Any

from sedna.runtime.config import GMConfig
from sedna.runtime.kube import SECRETS, AlreadyExists, KubeClient, api_client_from_config
from sedna.runtime.kube.config import KubeConfigError
from sedna.runtime.messaging.auth import NODE_LABEL, SECRET_TOKEN_KEY, node_token_secret_name


def token_secret(node: str, namespace: str, token: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": node_token_secret_name(node),
            "namespace": namespace,
            "labels": {NODE_LABEL: node},
        },
        "data": {SECRET_TOKEN_KEY: base64.b64encode(token.encode()).decode()},
    }


def issue_node_token(kube: KubeClient, node: str, namespace: str) -> str:
    """Create or replace the node's token Secret; returns the new token."""
    if not node or len(node) > 253 - len(node_token_secret_name("")):
        raise ValueError(f"invalid node name {node!r}")
    token = secrets.token_urlsafe(32)
    body = token_secret(node, namespace, token)
    secrets_api = kube.resource(SECRETS)
    try:
        secrets_api.create(namespace, body)
    except AlreadyExists:
        current = secrets_api.get(namespace, body["metadata"]["name"])
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        secrets_api.replace(namespace, body["metadata"]["name"], body)
    return token


# The file embedded mode writes into embedded.stateDir (sedna.embedded.mode, which imports
# this module, so the name is repeated here rather than imported).
EMBEDDED_KUBECONFIG_NAME = "kubeconfig"


def cluster_kubeconfig(config: GMConfig) -> str:
    """The kubeconfig the command talks to: gm.yaml's, or the running embedded server's.

    With `embedded.enabled` and neither `kubeConfig` nor `master` set (config/gm.yaml),
    the GM's cluster is its own API server, whose kubeconfig it writes at start; the
    command must issue the token there, not in whatever cluster ~/.kube/config names.
    """
    if config.kubeConfig or config.master or not config.embedded.enabled:
        return config.kubeConfig
    path = Path(config.embedded.stateDir) / EMBEDDED_KUBECONFIG_NAME
    if not path.is_file():
        raise KubeConfigError(
            f"embedded mode: no {path} (it is written while the GM runs: "
            "start sedna-gm --config with this gm.yaml first)"
        )
    return str(path)


def create_token_command(config: GMConfig, node: str, namespace: str | None) -> str:
    kube = KubeClient(api_client_from_config(cluster_kubeconfig(config), config.master))
    return issue_node_token(kube, node, namespace or config.websocket.nodeTokenNamespace)
