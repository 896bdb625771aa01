"""Hostile patches against the embedded API server: how long each takes to be answered,
and how long other requests wait meanwhile.

The server runs in a child process, and so does a prober (GET of a namespace, back to
back) while this process sends one attack at a time; for each attack the bench prints its answer,
its wall time and the probe's worst and 99th-percentile latency during it, against a
baseline without an attack. Goal: every attack answered within a second, no probe
held up by more than 100 ms. ``--runs N`` repeats the whole bench with a fresh server
(the worst wait varies with what else the machine runs: the load average is recorded).
Writes ``bench/results/hostile_patches.json``: each run's figures and the worst wait
per attack over the runs.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import time
from pathlib import Path
from typing import Any

import embedded_server  # bench/: the server every process dials
import kubernetes

RESULTS = Path(__file__).resolve().parent / "results" / "hostile_patches.json"
NS = "/api/v1/namespaces/default"


def _serve(q: Any, stop: Any) -> None:
    srv = embedded_server.server()
    srv.start()
    q.put(srv.url)
    stop.wait()
    srv.stop()


def _request(client: Any, method: str, path: str, body: Any, ctype: str) -> tuple[int, bytes]:
    params = client.param_serialize(
        method,
        path,
        header_params={"Content-Type": ctype, "Accept": "application/json"},
        body=body,
        auth_settings=["BearerToken"],
    )
    resp = client.call_api(*params, _request_timeout=120)
    return int(resp.status), resp.read()


def _attacks() -> list[tuple[str, str, str, Any, Any]]:
    """(name, object path, content type, object to create first, patch)."""
    copy_bomb: list[dict[str, Any]] = [
        {"op": "add", "path": "/metadata/finalizers", "value": ["a" * 10]}
    ]
    copy_bomb += [
        {"op": "copy", "from": "/metadata/finalizers", "path": "/metadata/finalizers/-"}
    ] * 40
    big_list = {"metadata": {"name": "shift", "finalizers": [f"f{i}" for i in range(100_000)]}}
    shift = [{"op": "add", "path": "/metadata/finalizers/0", "value": "x"}] * 10_000
    env = [{"name": f"E{i}", "value": "v"} for i in range(20_000)]
    pod = {
        "metadata": {"name": "env"},
        "spec": {"containers": [{"name": "c", "image": "busybox", "env": env}]},
    }
    more_env = [{"name": f"E{i}", "value": "w"} for i in range(0, 40_000, 2)]
    strategic = {"spec": {"containers": [{"name": "c", "env": more_env}]}}
    ten_k = [{"op": "test", "path": "/metadata/name", "value": "many"}] * 10_000
    big_merge = {"data": {f"k{i}": "v" * 100 for i in range(25_000)}}
    return [
        ("copy bomb (41 ops, 1.8 KB)", f"{NS}/configmaps/bomb", "application/json-patch+json",
         {"metadata": {"name": "bomb"}}, copy_bomb),
        ("10,000 inserts at the head of a 100,000-item list", f"{NS}/configmaps/shift",
         "application/json-patch+json", big_list, shift),
        ("10,000 test operations", f"{NS}/configmaps/many", "application/json-patch+json",
         {"metadata": {"name": "many"}}, ten_k),
        ("strategic merge of 20,000 env entries onto 20,000", f"{NS}/pods/env",
         "application/strategic-merge-patch+json", pod, strategic),
        ("2.6 MB merge patch", f"{NS}/configmaps/merge", "application/merge-patch+json",
         {"metadata": {"name": "merge"}}, big_merge),
    ]  # fmt: skip


def _probe(url: str, stop: Any, q: Any) -> None:
    """GET a namespace back to back until stopped; hands back (start, seconds) pairs."""
    client = kubernetes.client.ApiClient(embedded_server.configuration(url))
    samples: list[tuple[float, float]] = []
    while not stop.is_set():
        start = time.monotonic()
        _request(client, "GET", "/api/v1/namespaces/default", None, "application/json")
        samples.append((start, time.monotonic() - start))
    client.close()
    q.put(samples)


def _worst(samples: list[tuple[float, float]], t0: float, t1: float) -> tuple[float, int]:
    """The longest probe that overlapped [t0, t1], and how many did."""
    during = [d for s, d in samples if s < t1 and s + d > t0]
    return (max(during) if during else 0.0), len(during)


def run_once() -> dict[str, Any]:
    """One server, one prober, every attack once: the figures of this run."""
    load = [round(x, 2) for x in os.getloadavg()]
    stop_ev = mp.Event()
    q: Any = mp.Queue()
    proc = mp.Process(target=_serve, args=(q, stop_ev), daemon=True)
    proc.start()
    url = q.get(timeout=30)
    attacker = kubernetes.client.ApiClient(embedded_server.configuration(url))
    probe_stop = mp.Event()
    probe_q: Any = mp.Queue()
    prober = mp.Process(target=_probe, args=(url, probe_stop, probe_q), daemon=True)
    prober.start()
    time.sleep(1.5)
    base_window = (time.monotonic() - 1.0, time.monotonic())
    windows: list[tuple[str, float, float, int]] = []
    for name, path, ctype, obj, patch in _attacks():
        collection = path.rsplit("/", 1)[0]
        status, data = _request(attacker, "POST", collection, obj, "application/json")
        assert status == 201, (status, data[:200])
        time.sleep(0.3)
        start = time.monotonic()
        status, data = _request(attacker, "PATCH", path, patch, ctype)
        windows.append((name, start, time.monotonic(), status))
        time.sleep(0.3)
    probe_stop.set()
    samples: list[tuple[float, float]] = probe_q.get(timeout=30)
    prober.join(10)
    attacker.close()
    stop_ev.set()
    proc.join(10)
    base = [d for s, d in samples if base_window[0] <= s <= base_window[1]]
    out: dict[str, Any] = {
        "load_average": load,
        "baseline_probe_ms": {
            "max": round(max(base) * 1000, 1),
            "median": round(statistics.median(base) * 1000, 1),
        },
    }
    print(f"load average {load[0]} {load[1]} {load[2]}")
    print(f"{'baseline (no attack)':52s} probe max {out['baseline_probe_ms']['max']} ms")
    for name, t0, t1, status in windows:
        worst, n = _worst(samples, t0, t1)
        figure = {
            "status": status,
            "answered_ms": round((t1 - t0) * 1000, 1),
            "probe_max_ms": round(worst * 1000, 1),
            "probes": n,
        }
        out[name] = figure
        print(f"{name:52s} {status} in {figure['answered_ms']} ms; "
              f"probe max {figure['probe_max_ms']} ms over {n} probes")  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description="hostile patches against the embedded API server")
    parser.add_argument("--runs", type=int, default=1, help="repeat the bench (fresh server)")
    args = parser.parse_args()
    runs = [run_once() for _ in range(max(1, args.runs))]
    worst = {
        name: max(run[name]["probe_max_ms"] for run in runs)
        for name in runs[0]
        if name not in ("load_average", "baseline_probe_ms")
    }
    print(f"worst probe wait over {len(runs)} run(s):")
    for name, ms in worst.items():
        print(f"  {name:50s} {ms} ms")
    out = {"runs": runs, "worst_probe_max_ms": worst}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
