"""Testing a sedna-gm feature plugin against a real API server, without a cluster.

The pytest fixtures (`sedna_apiserver`, `sedna_api_client`, `sedna_kube`,
`sedna_namespace`, `sedna_gm`, `sedna_lc`, `sedna_kubelet`, `sedna_logs`) come with the
package through the `pytest11` entry point. The classes below are what they hand out,
for tests that build their own.
"""

from __future__ import annotations

from sedna.testing.apiserver import api_client_for, start_apiserver
from sedna.testing.gm import GMHarness
from sedna.testing.kubelet import Kubelet
from sedna.testing.lc import LCBase, Received
from sedna.testing.logs import LogCapture, capture_logs
from sedna.testing.staged import StagedJobApi, StagedJobLC, pod_env, run_stage, start_stage
from sedna.testing.waiting import poll, wait_until

__all__ = [
    "GMHarness",
    "Kubelet",
    "LCBase",
    "LogCapture",
    "Received",
    "StagedJobApi",
    "StagedJobLC",
    "api_client_for",
    "capture_logs",
    "pod_env",
    "poll",
    "run_stage",
    "start_apiserver",
    "start_stage",
    "wait_until",
]
