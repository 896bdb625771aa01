"""Joint inference: "service created -> its Deployments, Service and a status", and to Running.

Processes: the API server, the GM with only the `joint_inference` feature, and the
embedded mode's cluster stand-ins (Deployment controller and a simulated kubelet for
`edge-node`, pods Running at once); this process creates N renamed copies of Sedna's
sample service from writer threads and watches them. Figures: services/s until every
service has its two Deployments and its Service and a status condition (`created`),
and until every one is Running (`running`), and the GM's CPU per service (utime+stime
of its process until idle again, as in bench_reconcile).

    python bench/bench_joint_inference.py --services 200
"""

from __future__ import annotations

import argparse
import copy
import json
import multiprocessing as mp
import os
import platform
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import embedded_server  # noqa: E402  (the HTTPS server every process dials)
from bench_reconcile import (  # noqa: E402  # the shared server and CPU helpers
    SAMPLES,
    _cpu_seconds,
    _quiet_logs,
    _sample,
    _serve,
    _settled_cpu,
)

RESULTS = BENCH / "results" / "joint_inference.json"
NODE = "edge-node"


def _run_gm(url: str, ns: str, workers: int, ready_q: Any, stop: Any) -> None:
    from loguru import logger

    logger.remove()
    logger.add(open(os.devnull, "w"), level="INFO")  # noqa: SIM115  # production level
    logger.add(sys.stderr, level="WARNING")
    import sedna_joint_inference.plugin as ji_plugin
    from dependency_injector import providers

    from sedna.manager import Manager
    from sedna.plugins.loader import discover_plugins
    from sedna.runtime import GMConfig, RuntimeContainer

    features: dict[str, Any] = {
        p.name: {"enabled": False} for p in discover_plugins() if p.name != ji_plugin.FEATURE_NAME
    }
    features[ji_plugin.FEATURE_NAME] = {"workers": workers}
    config = GMConfig.model_validate(
        {
            "namespace": ns,
            "websocket": {"address": "127.0.0.1", "port": 0, "auth": "none"},
            "metrics": {"enabled": False},
            "features": features,
        }
    )
    container = RuntimeContainer(config=config)
    container.api_client.override(providers.Object(embedded_server.client(url)))
    manager = Manager(
        config, container=container, extra_plugins={ji_plugin.FEATURE_NAME: ji_plugin}
    )
    manager.start()
    ready_q.put(os.getpid())
    stop.wait()
    manager.stop()


def _run_cluster(url: str, ns: str, ready_q: Any, stop: Any) -> None:
    _quiet_logs()
    from sedna.embedded.deployments import DeploymentController
    from sedna.embedded.kubelet import SimulatedKubelet
    from sedna.runtime.kube import KubeClient

    kube = KubeClient(embedded_server.client(url))
    deployments = DeploymentController(kube, namespace=ns, workers=2)
    kubelet = SimulatedKubelet(NODE, kube, pod_start_seconds=0.0)
    deployments.start()
    kubelet.start()
    ready_q.put(os.getpid())
    stop.wait()
    kubelet.stop()
    deployments.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--services", type=int, default=200)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    _quiet_logs()
    from sedna.runtime.kube import (
        DEPLOYMENTS,
        MODELS,
        NAMESPACES,
        KubeClient,
        sedna_resource,
    )

    ctx = mp.get_context("spawn")
    url_q, server_stop = ctx.Queue(), ctx.Event()
    server = ctx.Process(target=_serve, args=(url_q, server_stop), daemon=True)
    server.start()
    url, server_pid = url_q.get(timeout=120)
    ns = "bench-ji"
    kube = KubeClient(embedded_server.client(url))
    kube.resource(NAMESPACES).create(None, {"metadata": {"name": ns}})
    for name in ("helmet-detection-inference-big-model", "helmet-detection-inference-little-model"):
        kube.resource(MODELS).create(ns, {"metadata": {"name": name},
                                          "spec": {"url": "/m", "format": "pb"}})  # fmt: skip
    stop = ctx.Event()
    gm_q, cl_q = ctx.Queue(), ctx.Queue()
    gm = ctx.Process(target=_run_gm, args=(url, ns, args.workers, gm_q, stop), daemon=True)
    cluster = ctx.Process(target=_run_cluster, args=(url, ns, cl_q, stop), daemon=True)
    gm.start()
    cluster.start()
    gm_pid, _ = gm_q.get(timeout=120), cl_q.get(timeout=120)
    time.sleep(1.0)
    jis = kube.resource(sedna_resource("jointinferenceservices"))
    template = _sample("jointinferenceservice_v1alpha1.yaml")
    template["metadata"].pop("namespace", None)
    n = args.services
    gm_cpu0, srv_cpu0 = _cpu_seconds(gm_pid), _cpu_seconds(server_pid)

    def work(w: int) -> None:
        for i in range(w, n, args.writers):
            svc = copy.deepcopy(template)
            svc["metadata"]["name"] = f"ji-{i:05d}"
            jis.create(ns, svc)

    start = time.perf_counter()
    threads = [threading.Thread(target=work, args=(w,)) for w in range(args.writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    written = time.perf_counter()
    created_at = running_at = None
    deadline = start + args.timeout
    while time.perf_counter() < deadline:
        items = jis.list(ns)["items"]
        latest = [
            ((i.get("status") or {}).get("conditions") or [{}])[-1].get("type") for i in items
        ]
        if created_at is None and len(items) == n and all(latest):
            created_at = time.perf_counter()
        if len(items) == n and all(t == "Running" for t in latest):
            running_at = time.perf_counter()
            break
        time.sleep(0.05)
    gm_cpu = _settled_cpu(gm_pid) - gm_cpu0
    srv_cpu = _cpu_seconds(server_pid) - srv_cpu0
    deps = len(kube.resource(DEPLOYMENTS).list(ns)["items"])
    stop.set()
    gm.join(15)
    cluster.join(15)
    server_stop.set()
    server.join(10)
    if created_at is None or running_at is None:
        print(f"timed out: created={created_at} running={running_at}", file=sys.stderr)
        return 1
    result = {
        "services": n,
        "deployments": deps,
        "writers_s": round(written - start, 3),
        "created_per_s": round(n / (created_at - start), 1),
        "running_per_s": round(n / (running_at - start), 1),
        "gm_cpu_ms_per_service": round(1000 * gm_cpu / n, 2),
        "server_cpu_ms_per_service": round(1000 * srv_cpu / n, 2),
        "workers": args.workers,
        "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "samples": str(SAMPLES.relative_to(BENCH.parent)),
    }
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
