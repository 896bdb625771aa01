"""Workqueue throughput: how many keys per second add -> get -> done can move.

The queue sits under every controller, so its cost per key bounds the GM's
reconcile rate before any sync runs. Measured here, with empty syncs:

* `inline`: one thread doing add, get, done per key (client-go's BenchmarkQueue),
* `workers=N`: one producer adding distinct keys, N worker threads get/done,
* each with no metrics and with the prometheus provider,
* `add_after`: scheduling delayed keys into the waiting heap (real clock), and
  how fast the waiting loop moves them into the queue once due.

Run: `python bench/bench_workqueue.py [--keys N]`. Prints a table and writes
`bench/results/workqueue.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from sedna.runtime.clock import FakeClock
from sedna.runtime.workqueue import (
    DelayingQueue,
    PrometheusWorkqueueMetrics,
    Queue,
    RateLimitingQueue,
    WorkqueueMetricsProvider,
)

RESULTS = Path(__file__).resolve().parent / "results" / "workqueue.json"


def _provider(with_metrics: bool) -> WorkqueueMetricsProvider | None:
    return PrometheusWorkqueueMetrics(CollectorRegistry()) if with_metrics else None


def bench_inline(keys: list[str], with_metrics: bool) -> float:
    q: Queue[str] = Queue("bench", metrics=_provider(with_metrics))
    start = time.perf_counter()
    for key in keys:
        q.add(key)
        item, _ = q.get()
        assert item is not None
        q.done(item)
    return len(keys) / (time.perf_counter() - start)


def bench_workers(keys: list[str], workers: int, with_metrics: bool) -> float:
    q: RateLimitingQueue[str] = RateLimitingQueue("bench", metrics=_provider(with_metrics))
    processed = [0] * workers

    def work(n: int) -> None:
        count = 0
        while True:
            item, shutdown = q.get()
            if shutdown:
                break
            assert item is not None
            q.forget(item)  # what the controller does on success
            q.done(item)
            count += 1
        processed[n] = count

    threads = [threading.Thread(target=work, args=(n,)) for n in range(workers)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for key in keys:
        q.add(key)
    q.shut_down()  # workers drain what is queued, then stop
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    assert sum(processed) == len(keys), (sum(processed), len(keys))
    return len(keys) / elapsed


def bench_add_after(keys: list[str]) -> tuple[float, float]:
    """(add_after calls/s into the heap, keys/s moved by the loop once all are due)."""
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue("bench", clock=clock)
    clock.block_until_waiters(1)
    start = time.perf_counter()
    for i, key in enumerate(keys):
        q.add_after(key, 1.0 + (i * 7919 % 600))
    scheduled = len(keys) / (time.perf_counter() - start)
    start = time.perf_counter()
    clock.step(700)
    while len(q) < len(keys):
        time.sleep(0.0005)
    moved = len(keys) / (time.perf_counter() - start)
    q.shut_down()
    return scheduled, moved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs")
    args = parser.parse_args()
    keys = [f"namespace-{i % 50}/job-{i}" for i in range(args.keys)]

    def best(fn: Callable[..., float], *a: Any) -> float:
        return max(fn(*a) for _ in range(args.repeat))

    results: dict[str, float] = {}
    for with_metrics in (False, True):
        tag = "prometheus" if with_metrics else "no_metrics"
        results[f"inline_{tag}"] = best(bench_inline, keys, with_metrics)
        for workers in (1, 4):
            results[f"workers{workers}_{tag}"] = best(bench_workers, keys, workers, with_metrics)
    scheduled, moved = max(bench_add_after(keys) for _ in range(args.repeat))
    results["add_after_schedule"] = scheduled
    results["add_after_due_moved"] = moved

    print(f"workqueue throughput, {args.keys} distinct keys, best of {args.repeat} (keys/s)")
    for name, value in results.items():
        print(f"  {name:<28} {value:>12,.0f}")

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "benchmark": "workqueue",
                "unit": "keys_per_second",
                "keys": args.keys,
                "repeat": args.repeat,
                "results": {k: round(v) for k, v in results.items()},
                "python": sys.version.split()[0],
                "platform": platform.platform(),
                "cpus": os.cpu_count(),
                "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
