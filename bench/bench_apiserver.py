"""Throughput of the in-process API server through the official client.

Measures create, get, list (100 objects) and watch delivery (events/s from create to
a watcher reading them). One client thread per figure unless ``--threads``; prints the
figures and writes ``bench/results/apiserver.json``.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import embedded_server  # bench/: the server every process dials
import kubernetes

RESULTS = Path(__file__).resolve().parent / "results" / "apiserver.json"


def _raw(client: kubernetes.client.ApiClient, method: str, path: str, body: Any = None) -> Any:
    params = client.param_serialize(
        method,
        path,
        header_params={"Content-Type": "application/json", "Accept": "application/json"},
        body=body,
        auth_settings=["BearerToken"],
    )
    resp = client.call_api(*params)
    data = resp.read()
    if resp.status >= 300:
        raise RuntimeError(f"{method} {path}: {resp.status} {data[:200]!r}")
    return data


def _rate(n: int, fn: Any, threads: int) -> float:
    start = time.perf_counter()
    if threads == 1:
        for i in range(n):
            fn(i)
    else:
        with ThreadPoolExecutor(threads) as ex:
            list(ex.map(fn, range(n)))
    return n / (time.perf_counter() - start)


def _serve(q: Any, stop: Any) -> None:
    srv = embedded_server.server()
    srv.start()
    q.put(srv.url)
    stop.wait()
    srv.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--same-process",
        action="store_true",
        help="run the server in this process (client and server then share the GIL)",
    )
    args = ap.parse_args()
    import multiprocessing as mp

    stop_ev = mp.Event()
    if args.same_process:
        srv = embedded_server.server()
        srv.start()
        url = srv.url
    else:
        q: Any = mp.Queue()
        proc = mp.Process(target=_serve, args=(q, stop_ev), daemon=True)
        proc.start()
        url = q.get(timeout=30)
    cfg = embedded_server.configuration(url)
    cfg.connection_pool_maxsize = max(4, args.threads)
    client = kubernetes.client.ApiClient(cfg)
    ns = "bench"
    _raw(client, "POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    coll = f"/api/v1/namespaces/{ns}/configmaps"
    n = args.n
    out: dict[str, float] = {}
    out["create_per_s"] = _rate(
        n,
        lambda i: _raw(client, "POST", coll, {"metadata": {"name": f"c{i}"}, "data": {"k": "v"}}),
        args.threads,
    )
    out["get_per_s"] = _rate(n, lambda i: _raw(client, "GET", f"{coll}/c{i}"), args.threads)
    _raw(client, "POST", "/api/v1/namespaces", {"metadata": {"name": "small"}})
    for i in range(100):
        _raw(client, "POST", "/api/v1/namespaces/small/configmaps", {"metadata": {"name": f"c{i}"}})
    out["list100_per_s"] = _rate(
        n // 4, lambda i: _raw(client, "GET", "/api/v1/namespaces/small/configmaps"), args.threads
    )
    core = kubernetes.client.CoreV1Api(client)
    out["typed_get_per_s"] = _rate(
        n // 2, lambda i: core.read_namespaced_config_map(f"c{i}", ns), args.threads
    )

    # watch delivery: one watcher, a writer creating secrets; time until the last event is read
    wcfg = embedded_server.configuration(url)
    wclient = kubernetes.client.ApiClient(wcfg)
    params = wclient.param_serialize(
        "GET",
        f"/api/v1/namespaces/{ns}/secrets",
        query_params=[("watch", "true"), ("resourceVersion", _list_rv(client, ns))],
        auth_settings=["BearerToken"],
    )
    resp = wclient.call_api(*params, _request_timeout=60)
    got = 0
    done = threading.Event()

    def reader() -> None:
        nonlocal got
        for line in resp.response:
            if line.strip():
                got += 1
                if got >= n:
                    done.set()
                    return

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    start = time.perf_counter()
    for i in range(n):
        _raw(client, "POST", f"/api/v1/namespaces/{ns}/secrets", {"metadata": {"name": f"s{i}"}})
    done.wait(60)
    out["watch_delivery_events_per_s"] = got / (time.perf_counter() - start)
    resp.response.release_conn()
    client.close()
    if args.same_process:
        srv.stop()
    else:
        stop_ev.set()
        proc.join(10)
    out = {k: round(v, 1) for k, v in out.items()}
    out["n"] = n
    out["threads"] = args.threads
    out["server_in_separate_process"] = not args.same_process
    for k, v in out.items():
        print(f"{k:32s} {v}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")


def _list_rv(client: kubernetes.client.ApiClient, ns: str) -> str:
    return str(
        json.loads(_raw(client, "GET", f"/api/v1/namespaces/{ns}/secrets"))["metadata"][
            "resourceVersion"
        ]
    )


if __name__ == "__main__":
    main()
