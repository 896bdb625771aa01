"""This GM against Sedna's Go GM, side by side: CPU per job, wall, peak and idle RSS, idle CPU.

The two GMs run in turns, never at once, each on a fresh API server of its own
(`sedna-gm apiserver`, one process per run) and with all its features as shipped. A
round of one GM:

1. start the API server, then the GM (ours: `sedna-gm --config` against the server's
   kubeconfig, LC websocket auth `none` as Sedna's, no leader election; Go's: its
   `--config` in Sedna's format);
2. idle, no objects: CPU ms/s of the GM process over `--idle-seconds`, and its RSS;
3. create the inputs of `--jobs` jobs of a kind with 4 writer threads (FL: Sedna's
   surface-defect-detection example, one Model and two Datasets shared, jobs renamed;
   JI: the helmet-detection example; the multi-edge kinds OS, FE, ReID and VA: their
   examples), wait until every job has what the GM makes for it (FL: its aggregation
   Service and 3 worker pods; JI: 2 Deployments and a Service; OS: 2 tracking pods, 2
   Deployments, 2 Services; FE: a Deployment and a Service; ReID: a pod; VA: a pod and
   a Service);
4. CPU per job (the GM process's user+system time from the first create to the last
   job done, per job), wall for the same span, peak RSS (VmHWM);
5. idle with the jobs present and nothing changing: CPU ms/s again.

Nothing runs a worker (pods stay Pending) and no LC connects: the kinds measured are
those whose work is driven without an LC. `ds` is the Dataset fan-out instead: a
scripted LC (`sedna.testing.LCBase`, the Go LC's protocol) connects for one node,
`--jobs` Datasets on that node are created, and CPU per job is per Dataset until the
LC has received every one. (Sedna sends a Model to an LC only inside a job's message:
there is no Model fan-out of its own to measure.) Each figure is the median over `--rounds`
with its range; the ratios are this GM's over Go's.

Run: `python bench/bench_vs_sedna.py [--kinds fl,ji,os,fe,reid,va,ds] [--jobs N] [--rounds R]
[--idle-seconds S]`. Needs Sedna's Go GM (`$SEDNA_GO_GM_BIN`, else
`../shared/sedna-bin/sedna-gm` beside the checkout): without it, it says so and exits 0.
Writes `bench/results/vs_sedna.json`.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results" / "vs_sedna.json"
EXAMPLES = ROOT / "examples"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def go_gm_binary() -> Path | None:
    env = os.environ.get("SEDNA_GO_GM_BIN")
    path = Path(env) if env else ROOT.parent / "shared" / "sedna-bin" / "sedna-gm"
    return path if path.is_file() and os.access(path, os.X_OK) else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


def memory_mb(pid: int, key: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def wait_for(probe: Callable[[], Any], what: str, timeout: float, step: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = probe()
        if got:
            return got
        time.sleep(step)
    raise SystemExit(f"timed out after {timeout:g} s waiting for {what}")


# -- processes ------------------------------------------------------------------------


class Proc:
    def __init__(self, argv: list[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.log = log
        self.metrics_port = 0  # ours: where /readyz answers
        self.ws_port = 0  # the LC websocket
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def start_apiserver(folder: Path) -> tuple[Proc, Path]:
    kubeconfig = folder / "kubeconfig"
    proc = Proc(
        [sys.executable, "-m", "sedna.cli", "apiserver", "--port", "0",
         "--kubeconfig", str(kubeconfig), "--state-dir", str(folder / "state")],
        folder / "apiserver.log",
    )  # fmt: skip
    wait_for(kubeconfig.exists, "the API server's kubeconfig", 60)
    return proc, kubeconfig


def start_ours(folder: Path, kubeconfig: Path, *, wait: bool = True) -> Proc:
    config = yaml.safe_load((ROOT / "config" / "gm.cluster.yaml").read_text())
    config["kubeConfig"] = str(kubeconfig)
    config["websocket"].update(address="127.0.0.1", port=free_port(), auth="none")
    config["metrics"] = {"enabled": True, "address": "127.0.0.1", "port": free_port(),
                         "auth": "none"}  # fmt: skip
    config["leaderElection"] = {"enabled": False}
    config["logging"] = {"level": "WARNING", "format": "text"}
    path = folder / "gm.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = Proc([sys.executable, "-m", "sedna.cli", "--config", str(path)], folder / "gm.log")
    port = proc.metrics_port = config["metrics"]["port"]
    proc.ws_port = config["websocket"]["port"]
    if wait:
        wait_for(lambda: _http_ok(f"http://127.0.0.1:{port}/readyz"), "our GM's /readyz", 120)
    return proc


def start_go(folder: Path, kubeconfig: Path, binary: Path) -> Proc:
    port = free_port()
    config = {
        "kubeConfig": str(kubeconfig),
        "namespace": "",
        "websocket": {"address": "127.0.0.1", "port": port},
        "localController": {"server": "http://localhost:9100"},
    }
    path = folder / "gm-config.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = Proc([str(binary), "--config", str(path)], folder / "gm.log")
    proc.ws_port = port
    wait_for(lambda: _listening(port), "the Go GM's websocket port", 120)
    return proc


def _http_ok(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


# -- kinds ----------------------------------------------------------------------------


def _docs(*files: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for f in files:
        out += [d for d in yaml.safe_load_all((EXAMPLES / f).read_text()) if d]
    return out


class Kind:
    """What to create for a kind, and when a job of it is done."""

    def __init__(
        self,
        name: str,
        shared: list[dict[str, Any]],
        job: dict[str, Any],
        label: str,
        wanted: dict[str, int],
    ) -> None:
        self.name, self.shared, self.job, self.label, self.wanted = (
            name, shared, job, label, wanted)  # fmt: skip


KINDS = {
    "fl": Kind(
        "FederatedLearningJob",
        _docs("federated-learning/01-model.yaml", "federated-learning/02-datasets.yaml"),
        _docs("federated-learning/03-federated-learning-job.yaml")[0],
        "federatedlearningjob.sedna.io/name",
        {"pods": 3, "services": 1},
    ),
    "ji": Kind(
        "JointInferenceService",
        _docs("joint-inference/01-models.yaml"),
        _docs("joint-inference/02-joint-inference-service.yaml")[0],
        "jointinferenceservice.sedna.io/name",
        {"deployments": 2, "services": 1},
    ),
    # The multi-edge kinds Sedna's Go GM has a controller for (ObjectTrackingService:
    # none, so nothing to compare).
    "os": Kind(
        "ObjectSearchService",
        [],
        _docs("object-search-service/object-search-service.yaml")[0],
        "objectsearchservice.sedna.io/name",
        {"pods": 2, "deployments": 2, "services": 2},
    ),
    "fe": Kind(
        "FeatureExtractionService",
        _docs("feature-extraction-service/01-model.yaml"),
        _docs("feature-extraction-service/02-feature-extraction-service.yaml")[0],
        "featureextractionservice.sedna.io/name",
        {"deployments": 1, "services": 1},
    ),
    "reid": Kind(
        "ReidJob",
        [],
        _docs("reid-job/reid-job.yaml")[0],
        "reidjob.sedna.io/name",
        {"pods": 1},
    ),
    "va": Kind(
        "VideoAnalyticsJob",
        _docs("video-analytics-job/01-model.yaml"),
        _docs("video-analytics-job/02-video-analytics-job.yaml")[0],
        "videoanalyticsjob.sedna.io/name",
        {"pods": 1, "services": 1},
    ),
}


def _plural(kind: str) -> str:
    return kind.lower() + "s"


def create_inputs(kubeconfig: Path, ns: str, kind: Kind, jobs: int) -> None:
    from sedna.runtime import KubeClient, api_client_from_config, sedna_resource
    from sedna.runtime.kube import NAMESPACES

    kube = KubeClient(api_client_from_config(str(kubeconfig), ""))
    kube.resource(NAMESPACES).create(None, {"metadata": {"name": ns}})
    for doc in kind.shared:
        doc = {**doc, "metadata": {k: v for k, v in doc["metadata"].items() if k != "namespace"}}
        kube.resource(sedna_resource(_plural(doc["kind"]))).create(ns, doc)
    res = kube.resource(sedna_resource(_plural(kind.name)))

    def create(i: int) -> None:
        job = copy.deepcopy(kind.job)
        job["metadata"] = {"name": f"job-{i:05d}"}
        res.create(ns, job)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(create, range(jobs)))


def done_jobs(kubeconfig: Path, ns: str, kind: Kind, jobs: int) -> int:
    from sedna.runtime import KubeClient, api_client_from_config
    from sedna.runtime.kube import DEPLOYMENTS, PODS, SERVICES

    kube = KubeClient(api_client_from_config(str(kubeconfig), ""))
    counts: dict[str, dict[str, int]] = {}
    for what, res in (("pods", PODS), ("services", SERVICES), ("deployments", DEPLOYMENTS)):
        if what not in kind.wanted:
            continue
        for obj in kube.resource(res).list(ns, label_selector=kind.label)["items"]:
            name = obj["metadata"]["labels"][kind.label]
            counts.setdefault(name, {}).setdefault(what, 0)
            counts[name][what] += 1
    return sum(1 for c in counts.values() if all(c.get(w, 0) >= n for w, n in kind.wanted.items()))


# -- one round ------------------------------------------------------------------------


def idle_cpu(pid: int, seconds: float) -> float:
    before = cpu_seconds(pid)
    time.sleep(seconds)
    return 1000 * (cpu_seconds(pid) - before) / seconds  # ms/s


def one_round(gm: str, kind_key: str, jobs: int, idle_s: float, go: Path) -> dict[str, float]:
    kind = KINDS[kind_key]
    with tempfile.TemporaryDirectory(prefix=f"vs-sedna-{gm}-") as tmp:
        folder = Path(tmp)
        api, kubeconfig = start_apiserver(folder)
        proc: Proc | None = None
        try:
            proc = start_ours(folder, kubeconfig) if gm == "ours" else start_go(
                folder, kubeconfig, go)  # fmt: skip
            time.sleep(2.0)  # caches synced and the start's own work done
            out = {"idle_cpu_ms_s": idle_cpu(proc.pid, idle_s),
                   "idle_rss_mb": memory_mb(proc.pid, "VmRSS")}  # fmt: skip
            cpu0, t0 = cpu_seconds(proc.pid), time.monotonic()
            creator = threading.Thread(target=create_inputs, args=(kubeconfig, "bench", kind, jobs))
            creator.start()  # fmt: skip
            wait_for(
                lambda: done_jobs(kubeconfig, "bench", kind, jobs) >= jobs,
                f"{jobs} {kind.name}s done by the {gm} GM",
                1800,
            )
            creator.join()
            out["wall_s"] = time.monotonic() - t0
            out["cpu_ms_per_job"] = 1000 * (cpu_seconds(proc.pid) - cpu0) / jobs
            out["peak_rss_mb"] = memory_mb(proc.pid, "VmHWM")
            time.sleep(2.0)
            out["idle_cpu_with_jobs_ms_s"] = idle_cpu(proc.pid, idle_s)
            return out
        finally:
            if proc is not None:
                proc.stop()
            api.stop()


# -- Dataset fan-out to a node's LC ------------------------------------------------------

FANOUT_NODE = "edge-node"


def _lc(port: int) -> Any:
    from sedna.testing import LCBase

    try:
        return LCBase(port, FANOUT_NODE)
    except OSError:
        return None


def create_datasets(kubeconfig: Path, ns: str, count: int) -> None:
    from sedna.runtime import KubeClient, api_client_from_config, sedna_resource
    from sedna.runtime.kube import NAMESPACES

    kube = KubeClient(api_client_from_config(str(kubeconfig), ""))
    kube.resource(NAMESPACES).create(None, {"metadata": {"name": ns}})
    res = kube.resource(sedna_resource("datasets"))
    template = _docs("incremental-learning/02-dataset.yaml")[0]

    def create(i: int) -> None:
        doc = copy.deepcopy(template)
        doc["metadata"] = {"name": f"ds-{i:05d}"}
        doc["spec"]["nodeName"] = FANOUT_NODE
        res.create(ns, doc)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(create, range(count)))


def fanout_round(gm: str, count: int, idle_s: float, go: Path) -> dict[str, float]:
    """`count` Datasets on one node, until the node's LC (a scripted client) has each."""
    with tempfile.TemporaryDirectory(prefix=f"vs-sedna-fanout-{gm}-") as tmp:
        folder = Path(tmp)
        api, kubeconfig = start_apiserver(folder)
        proc: Proc | None = None
        lc: Any = None
        try:
            proc = start_ours(folder, kubeconfig) if gm == "ours" else start_go(
                folder, kubeconfig, go)  # fmt: skip
            port = proc.ws_port
            lc = wait_for(lambda: _lc(port), f"the {gm} GM's LC websocket", 60)
            time.sleep(2.0)
            out = {"idle_cpu_ms_s": idle_cpu(proc.pid, idle_s),
                   "idle_rss_mb": memory_mb(proc.pid, "VmRSS")}  # fmt: skip
            cpu0, t0 = cpu_seconds(proc.pid), time.monotonic()
            creator = threading.Thread(target=create_datasets, args=(kubeconfig, "bench", count))
            creator.start()
            wait_for(
                lambda: len({m.name for m in lc.select("dataset")}) >= count,
                f"{count} Datasets at the LC of the {gm} GM",
                1800,
            )
            creator.join()
            out["wall_s"] = time.monotonic() - t0
            out["cpu_ms_per_job"] = 1000 * (cpu_seconds(proc.pid) - cpu0) / count
            out["peak_rss_mb"] = memory_mb(proc.pid, "VmHWM")
            time.sleep(2.0)
            out["idle_cpu_with_jobs_ms_s"] = idle_cpu(proc.pid, idle_s)
            return out
        finally:
            if lc is not None:
                lc.close()
            if proc is not None:
                proc.stop()
            api.stop()


def summary(runs: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(runs), 2), "min": round(min(runs), 2),
            "max": round(max(runs), 2)}  # fmt: skip


def _name(key: str) -> str:
    return "Dataset (fan-out to a node's LC)" if key == "ds" else KINDS[key].name


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kinds", default="fl,ji,os,fe,reid,va,ds")
    ap.add_argument("--jobs", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--idle-seconds", type=float, default=20.0)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    go = go_gm_binary()
    if go is None:
        print("skipped: Sedna's Go GM not found (set SEDNA_GO_GM_BIN, or put sedna-bin "
              "beside the checkout)")  # fmt: skip
        return 0
    result: dict[str, Any] = {
        "jobs": args.jobs,
        "rounds": args.rounds,
        "idle_seconds": args.idle_seconds,
        "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "load_average_at_start": round(os.getloadavg()[0], 2),
        "kinds": {},
    }
    for key in args.kinds.split(","):
        runs: dict[str, list[dict[str, float]]] = {"go": [], "ours": []}
        for r in range(args.rounds):
            for gm in ("go", "ours"):  # in turns, never at once
                if key == "ds":
                    got = fanout_round(gm, args.jobs, args.idle_seconds, go)
                else:
                    got = one_round(gm, key, args.jobs, args.idle_seconds, go)
                runs[gm].append(got)
                print(f"{_name(key)} round {r + 1} {gm}: "
                      + ", ".join(f"{k} {v:.2f}" for k, v in got.items()), flush=True)  # fmt: skip
        figures = {
            gm: {m: summary([run[m] for run in rs]) for m in rs[0]} for gm, rs in runs.items()
        }
        ratios = {
            m: round(figures["ours"][m]["median"] / figures["go"][m]["median"], 2)
            for m in figures["ours"]
            if figures["go"][m]["median"] > 0
        }
        result["kinds"][_name(key)] = {"figures": figures, "ratio_ours_to_go": ratios}
        print(json.dumps({_name(key): {"ratio_ours_to_go": ratios}}, indent=2))
    result["load_average_at_end"] = round(os.getloadavg()[0], 2)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(
        f"recorded in {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
