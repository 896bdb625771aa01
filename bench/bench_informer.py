"""Informer throughput: events per second from the API server to a handler.

Every controller sees the world through informers, so their cost per event bounds
how fast the GM can follow the cluster. Measured with the in-process API server
running in a child process (so this process's CPU time is the informer's alone)
and pods written by a second child process with several threads:

* `watch_add`: N pods created while the informer watches; events/s from the
  first create to the N-th ``on_add``, and the informer's CPU per event;
* `watch_update`: each pod patched once (N ``on_update``);
* `initial_list`: a fresh informer syncing the N pods (list + N adds);
* `list_raw` vs `list_models`: one LIST of the N pods parsed to dicts by
  ``ResourceClient`` versus deserialized into model classes by ``CoreV1Api``,
  the cost the raw path avoids.

Run: `python bench/bench_informer.py [--pods N] [--writers T]`. Prints a table and
writes `bench/results/informer.json`.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import embedded_server  # bench/: the server every process dials

RESULTS = Path(__file__).resolve().parent / "results" / "informer.json"


def _serve(port_q: Any, stop: Any) -> None:
    from loguru import logger

    logger.remove()
    srv = embedded_server.server(host="127.0.0.1", port=0, history=100_000)
    srv.start()
    port_q.put(srv.url)
    stop.wait()
    srv.stop()


def _write(url: str, ns: str, n: int, writers: int, op: str, done_q: Any) -> None:
    from sedna.runtime.kube import PODS, KubeClient

    client = KubeClient(embedded_server.client(url)).resource(PODS)

    def work(w: int) -> None:
        for i in range(w, n, writers):
            name = f"p{i:06d}"
            if op == "create":
                client.create(
                    ns,
                    {
                        "metadata": {"name": name, "labels": {"app": "bench", "i": str(i)}},
                        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
                    },
                )
            else:
                client.patch(ns, name, {"metadata": {"labels": {"patched": "yes"}}})

    threads = [threading.Thread(target=work, args=(w,)) for w in range(writers)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    end = time.perf_counter()  # CLOCK_MONOTONIC: comparable across processes on Linux
    done_q.put((n / (end - start), end))


class _Counter:
    """Counts one kind of handler call; notes when the target count is reached."""

    def __init__(self, target: int, kind: str = "add") -> None:
        self.target = target
        self.kind = kind
        self.count = 0
        self.first: float | None = None
        self.last: float | None = None
        self.done = threading.Event()

    def _hit(self, kind: str) -> None:
        if kind != self.kind:
            return
        self.count += 1
        if self.first is None:
            self.first = time.perf_counter()
        if self.count >= self.target:
            self.last = time.perf_counter()
            self.done.set()

    def on_add(self, obj: Any) -> None:
        self._hit("add")

    def on_update(self, old: Any, new: Any) -> None:
        self._hit("update")

    def on_delete(self, obj: Any) -> None:
        self._hit("delete")


def _phase(run: Callable[[], float | None], counter: _Counter, timeout: float) -> dict[str, Any]:
    """Run ``run`` (returns when its writes ended, or None) and wait for the counter."""
    cpu0 = time.process_time()
    start = time.perf_counter()
    writes_ended = run()
    if not counter.done.wait(timeout):
        raise SystemExit(f"timed out: {counter.count} of {counter.target} {counter.kind}s")
    cpu = time.process_time() - cpu0
    assert counter.first is not None and counter.last is not None
    out: dict[str, Any] = {
        # with writers: first to last event (the writers set the pace); without:
        # from the start (the informer's own list + dispatch)
        "events_per_s": round(
            counter.target
            / max(1e-9, counter.last - (counter.first if writes_ended is not None else start))
        ),
        "cpu_us_per_event": round(cpu / counter.target * 1e6, 1),
        "events_per_cpu_s": round(counter.target / cpu) if cpu else None,
        "seconds": round(counter.last - start, 3),
    }
    if writes_ended is not None:
        # <= 0 means the last event was handled before the writer saw its last response
        out["lag_after_last_write_ms"] = max(0.0, round((counter.last - writes_ended) * 1e3, 1))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pods", type=int, default=3000)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    n, writers = args.pods, args.writers

    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level="WARNING")

    import kubernetes

    from sedna.runtime.informers import InformerOptions, SharedInformerFactory
    from sedna.runtime.kube import NAMESPACES, PODS, KubeClient

    ctx = mp.get_context("spawn")
    port_q, done_q, stop = ctx.Queue(), ctx.Queue(), ctx.Event()
    server = ctx.Process(target=_serve, args=(port_q, stop), daemon=True)
    server.start()
    url = port_q.get(timeout=60)
    results: dict[str, Any] = {}
    try:
        api = embedded_server.client(url)
        kube = KubeClient(api)
        ns = "bench"
        kube.resource(NAMESPACES).create(None, {"metadata": {"name": ns}})
        opts = InformerOptions(inactivity_timeout=300.0)

        # -- watch: creates -------------------------------------------------
        factory = SharedInformerFactory(kube, namespace=ns, min_resync_period=0, options=opts)
        inf = factory.informer(PODS)
        counter = _Counter(n)
        inf.add_event_handler(counter)
        factory.start()
        factory.wait_for_cache_sync(30)

        def writer(op: str) -> Callable[[], float | None]:
            def run() -> float | None:
                p = ctx.Process(target=_write, args=(url, ns, n, writers, op, done_q))
                p.start()
                rate, ended = done_q.get(timeout=600)
                results[f"{op}_rate_writer"] = round(rate)
                p.join()
                return float(ended)

            return run

        results["watch_add"] = _phase(writer("create"), counter, 600)

        # -- watch: updates, with the handler of a second consumer too ---------
        counter = _Counter(n, "update")
        inf.add_event_handler(counter)
        other = _Counter(n, "add")
        inf.add_event_handler(other)  # late handler: gets the cache as adds
        other.done.wait(60)
        results["watch_update_3_handlers"] = _phase(writer("patch"), counter, 600)
        factory.stop()

        # -- initial list ---------------------------------------------------
        factory = SharedInformerFactory(kube, namespace=ns, min_resync_period=0, options=opts)
        counter = _Counter(n)
        factory.informer(PODS).add_event_handler(counter)

        def start() -> None:
            factory.start()

        results["initial_list"] = _phase(start, counter, 600)
        factory.stop()

        # -- one LIST: raw dicts vs model classes -----------------------------
        pods = kube.resource(PODS)
        core = kubernetes.client.CoreV1Api(api)
        timings: dict[str, float] = {}
        for label, fn in (
            ("list_raw", lambda: pods.list(ns)),
            ("list_models", lambda: core.list_namespaced_pod(ns)),
        ):
            best = float("inf")
            for _ in range(3):
                c0 = time.process_time()
                out = fn()
                best = min(best, time.process_time() - c0)
            assert out is not None
            timings[label] = best
        results["list_cpu_ms"] = {k: round(v * 1e3, 1) for k, v in timings.items()}
        results["list_models_over_raw"] = round(timings["list_models"] / timings["list_raw"], 1)
    finally:
        stop.set()
        server.join(10)

    doc = {
        "benchmark": "informer",
        "unit": "events_per_second",
        "pods": n,
        "writers": writers,
        "results": results,
        "notes": "server and writers run in child processes; cpu is this process only",
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    print(json.dumps(doc, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
