"""A minimal kopf operator for the reconcile bench's workload (same-machine baseline).

On an IncrementalLearningJob's creation it creates the inference pod (the job's
deploy template, the same labels and controller owner reference as the GM's) and
sets a ``Train/Waiting`` status condition through kopf's ``patch``. kopf runs with
its defaults as ``kopf run`` would: INFO logs (formatted, written to /dev/null
here), handler results posted as Kubernetes Events, progress kept in annotations;
standalone (no peering), watching one namespace. The pod is created with the raw
client the GM uses, so the difference measured is the framework's, not the client's.

kopf is a bench-only dependency (`pip install kopf`), not in pyproject.toml.

Run: `python bench/kopf_baseline.py [--jobs N]` (= `bench_reconcile.py --variants
kopf`, prints only); `bench/bench_reconcile.py` runs it as its ``kopf`` variant.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from typing import Any

import embedded_server  # bench/: the server every process dials


def run_operator(url: str, ns: str, workers: int, ready_q: Any, stop: Any) -> None:
    """Run the operator in this process until ``stop`` (a multiprocessing Event) is set."""
    import kopf

    from sedna.runtime.kube import PODS, KubeClient

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_reconcile import _reference_pod, _waiting_condition

    pods = KubeClient(embedded_server.client(url)).resource(PODS)

    @kopf.on.login()
    def login(**_: Any) -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(
            server=url, token=embedded_server.BENCH_TOKEN, ca_path=embedded_server.ca_file()
        )

    @kopf.on.startup()
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.execution.max_workers = workers  # sync handlers run in this thread pool
        settings.watching.server_timeout = 600

    @kopf.on.create("sedna.io", "v1alpha1", "incrementallearningjobs")
    def created(body: Any, meta: Any, patch: Any, **_: Any) -> None:
        owner = {
            "apiVersion": "sedna.io/v1alpha1",
            "kind": "IncrementalLearningJob",
            "name": meta["name"],
            "uid": meta["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        pods.create(ns, _reference_pod(dict(body), owner))
        patch.status["conditions"] = [_waiting_condition()]

    kopf.configure(verbose=False)
    devnull = open(os.devnull, "w")  # noqa: SIM115
    for h in logging.getLogger().handlers:
        if isinstance(h, logging.StreamHandler):
            h.setStream(devnull)
    logging.getLogger().addHandler(_warnings_to_stderr())

    stop_flag, ready_flag = threading.Event(), threading.Event()

    def relay() -> None:
        stop.wait()
        stop_flag.set()

    def announce() -> None:
        ready_flag.wait()
        time.sleep(1.0)  # the namespace watch is open
        ready_q.put(os.getpid())

    threading.Thread(target=relay, daemon=True).start()
    threading.Thread(target=announce, daemon=True).start()
    kopf.run(standalone=True, namespaces=[ns], stop_flag=stop_flag, ready_flag=ready_flag)


def _warnings_to_stderr() -> logging.Handler:
    h = logging.StreamHandler(sys.stderr)
    h.setLevel(logging.WARNING)
    return h


if __name__ == "__main__":
    import bench_reconcile

    sys.argv = [sys.argv[0], "--variants", "kopf", "--out", os.devnull, *sys.argv[1:]]
    sys.exit(bench_reconcile.main())
