"""Federated-learning reconcile throughput: "job created -> aggregator + Service + 2
training pods + phase Pending".

Processes as in `bench_reconcile.py` (whose helpers it uses): the in-process API server
(Sedna's CRDs) in a child process, the real `Manager` with only the
`federated_learning` plugin in another (websocket auth none on port 0, metrics off, INFO
logs into /dev/null), N FederatedLearningJobs (Sedna's v1alpha1 sample, renamed) created
by T writer threads in a third, after the Model and the two Datasets they name; this
process watches pods and jobs and notes when every job has its three pods and a phase.

Reported: jobs/s (wall, first create to last job done), the GM's and the server's CPU ms
per job, and the lag after the last create. Each run in a fresh namespace; the median
run by jobs/s is recorded.

Run: `python bench/bench_federated.py [--jobs N] [--writers T] [--workers W]
[--repeat R]`. Prints the figures and writes `bench/results/federated.json`.
"""

from __future__ import annotations

import argparse
import copy
import json
import multiprocessing as mp
import os
import platform
import queue
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import bench_reconcile as R  # noqa: E402  (the shared process and CPU helpers)
import embedded_server  # noqa: E402  (the HTTPS server every process dials)

RESULTS = BENCH / "results" / "federated.json"
LABEL = "federatedlearningjob.sedna.io/"


def _prepare(url: str, ns: str) -> None:
    from sedna.runtime.kube import DATASETS, MODELS, NAMESPACES, KubeClient

    kube = KubeClient(embedded_server.client(url))
    kube.resource(NAMESPACES).create(None, {"metadata": {"name": ns}})
    model = R._sample("model_v1alpha1.yaml")
    model["metadata"]["name"] = "surface-defect-detection-model"
    kube.resource(MODELS).create(ns, model)
    for i, node in ((1, "edge1"), (2, "edge2")):
        ds = R._sample("dataset_v1alpha1.yaml")
        ds["metadata"]["name"] = f"edge{i}-surface-defect-detection-dataset"
        ds["spec"]["nodeName"] = node
        kube.resource(DATASETS).create(ns, ds)


def _write(url: str, ns: str, n: int, writers: int, done_q: Any) -> None:
    from sedna.runtime.kube import KubeClient, sedna_resource

    client = KubeClient(embedded_server.client(url)).resource(
        sedna_resource("federatedlearningjobs")
    )
    template = R._sample("federatedlearningjob_v1alpha1.yaml")

    def work(w: int) -> None:
        for i in range(w, n, writers):
            job = copy.deepcopy(template)
            job["metadata"]["name"] = f"fl-{i:05d}"
            client.create(ns, job)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(writers)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done_q.put((start, time.perf_counter()))


def _run_gm(url: str, ns: str, workers: int, ready_q: Any, stop: Any) -> None:
    from loguru import logger

    logger.remove()
    logger.add(open(os.devnull, "w"), level="INFO")  # noqa: SIM115  # production level
    logger.add(sys.stderr, level="WARNING")

    import sedna_federated_learning.plugin as fl_plugin
    from dependency_injector import providers

    from sedna.manager import Manager
    from sedna.plugins.loader import discover_plugins
    from sedna.runtime import GMConfig, RuntimeContainer

    features: dict[str, Any] = {
        p.name: {"enabled": False} for p in discover_plugins() if p.name != fl_plugin.FEATURE_NAME
    }
    features[fl_plugin.FEATURE_NAME] = {"workers": workers}
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
        config, container=container, extra_plugins={fl_plugin.FEATURE_NAME: fl_plugin}
    )
    manager.start()
    ready_q.put(os.getpid())
    stop.wait()
    manager.stop()


class _Progress:
    def __init__(self, n: int) -> None:
        self.n = n
        self.pods: dict[str, set[str]] = {}
        self.phased: set[str] = set()
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.last = 0.0

    def _check(self) -> None:
        full = sum(1 for v in self.pods.values() if len(v) >= 3)
        if full >= self.n and len(self.phased) >= self.n and not self.done.is_set():
            self.last = time.perf_counter()
            self.done.set()

    def pod(self, job: str, name: str) -> None:
        with self.lock:
            self.pods.setdefault(job, set()).add(name)
            self._check()

    def phase(self, job: str) -> None:
        with self.lock:
            self.phased.add(job)
            self._check()

    def count(self) -> int:
        with self.lock:
            return len(self.phased & {k for k, v in self.pods.items() if len(v) >= 3})


def _run(ctx: Any, url: str, server_pid: int, args: argparse.Namespace) -> dict[str, Any]:
    from sedna.runtime.kube import PODS, KubeClient, sedna_resource

    ns = f"bench-fl-{int(time.time() * 1000) % 10_000_000}"
    _prepare(url, ns)
    ready_q, done_q, stop = ctx.Queue(), ctx.Queue(), ctx.Event()
    proc = ctx.Process(target=_run_gm, args=(url, ns, args.workers, ready_q, stop))
    proc.start()
    try:
        pid = ready_q.get(timeout=60)
    except queue.Empty:
        proc.kill()
        raise SystemExit("the GM did not start") from None
    progress = _Progress(args.jobs)
    kube = KubeClient(embedded_server.client(url))

    def on_pod(pod: dict[str, Any]) -> None:
        labels = pod["metadata"].get("labels") or {}
        if f"{LABEL}name" in labels:
            progress.pod(labels[f"{LABEL}name"], pod["metadata"]["name"])

    def on_job(job: dict[str, Any]) -> None:
        if (job.get("status") or {}).get("phase"):
            progress.phase(job["metadata"]["name"])

    watch_stop = threading.Event()
    streams = [
        R._watch(kube.resource(PODS), ns, on_pod, watch_stop),
        R._watch(kube.resource(sedna_resource("federatedlearningjobs")), ns, on_job, watch_stop),
    ]
    time.sleep(1.0)
    gm0, srv0 = R._cpu_seconds(pid), R._cpu_seconds(server_pid)
    writer = ctx.Process(target=_write, args=(url, ns, args.jobs, args.writers, done_q))
    writer.start()
    finished = progress.done.wait(args.timeout)
    end = progress.last if finished else time.perf_counter()
    start, written = done_q.get(timeout=60)
    writer.join()
    gm_cpu = R._settled_cpu(pid) - gm0
    srv_cpu = R._cpu_seconds(server_pid) - srv0
    watch_stop.set()
    for s in streams:
        s.close()
    stop.set()
    proc.join(30)
    done = progress.count()
    return {
        "jobs": args.jobs,
        "done": done,
        "jobs_per_s": round(done / max(end - start, 1e-9), 1),
        "gm_cpu_ms_per_job": round(1000 * gm_cpu / max(done, 1), 2),
        "server_cpu_ms_per_job": round(1000 * srv_cpu / max(done, 1), 2),
        "lag_after_last_create_s": round(max(0.0, end - written), 3),
        "finished": finished,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=200)
    p.add_argument("--writers", type=int, default=4)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--timeout", type=float, default=300.0)
    args = p.parse_args()
    ctx = mp.get_context("spawn")
    url_q, stop = ctx.Queue(), ctx.Event()
    server = ctx.Process(target=R._serve, args=(url_q, stop))
    server.start()
    url, server_pid = url_q.get(timeout=60)
    try:
        runs = [_run(ctx, url, server_pid, args) for _ in range(args.repeat)]
    finally:
        stop.set()
        server.join(30)
    runs.sort(key=lambda r: r["jobs_per_s"])
    median = runs[len(runs) // 2]
    for r in runs:
        print(json.dumps(r))
    print("median:", json.dumps(median))
    RESULTS.write_text(
        json.dumps(
            {
                "bench": "federated",
                "date": datetime.now(UTC).strftime("%Y-%m-%d"),
                "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                "params": vars(args),
                "median": median,
                "runs": runs,
            },
            indent=2,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
