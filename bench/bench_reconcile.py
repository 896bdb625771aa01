"""End-to-end reconcile throughput: "job created -> inference pod + Train/Waiting".

DESIGN.md principle 4 sets the target: with the whole framework in the loop the GM
must do at least 3x what kopf does on this workload. Each variant runs in processes
of its own so CPU time can be charged to whom it belongs:

* the in-process API server (Sedna's CRDs installed) in a child process;
* the controller under test in a child process: the real ``Manager`` with the
  IncrementalLearningJob plugin (websocket auth none on port 0, metrics off, INFO
  logs formatted into /dev/null), or a reference controller (``lean``: a raw
  threaded loop; ``kopf``: the minimal operator of ``bench/kopf_baseline.py``);
* N IncrementalLearningJobs (Sedna's sample, renamed) created by T writer threads
  in a third child process, after the Models and the Dataset they name;
* this process only watches jobs and pods (two raw watches) and notes when every
  job has its inference pod and a ``Train/Waiting`` condition.

Reported per variant: jobs/s (wall, first create to last job done), the
controller's CPU ms per job and the server's CPU ms per job (utime+stime from
/proc/<pid>/stat over the same window; the server's share includes serving the
writers and this watcher), the controller's context switches per job (all its
threads, /proc/<pid>/task/*/status, up to the last job done), and the lag after the
last create.

Variants: ``gm`` (production defaults: event recorder on, cache mutation detector
off), ``gm-no-events`` (recorder replaced by a no-op), ``gm-mutation-detector``
(``SEDNA_CACHE_MUTATION_DETECTOR=1``, as the tests run), ``lean``, ``kopf`` (only
when kopf is installed: it is a bench-only dependency, ``pip install kopf``).

Each variant runs ``--repeat`` times (3) against one server, each time in a fresh
namespace, the variants taking turns (gm, lean, kopf, gm, ...) so that a slow spell
of the shared machine falls on all of them; the median run by jobs/s is recorded,
with the controller's CPU per job as the median over all runs.
The controller's CPU is counted until its process is idle again, so Events still
queued at the end are included.

Run: `python bench/bench_reconcile.py [--jobs N] [--writers T] [--workers W]
[--variants gm,lean,...] [--repeat R] [--threads] [--profile]`. Prints a table and writes
`bench/results/reconcile.json` (not with ``--profile``: cProfile of every GM thread,
merged, top functions printed; the figures of a profiled run are not comparable).
``--threads`` adds, for gm and lean, the CPU ms and the context switches per job of each
controller thread (from /proc, 10 ms ticks, so ±0.02 ms/job at 500 jobs), read after the
measured window, and the breakdown of ``sync_breakdown``: the thread CPU of each API
request and of each sync's own Python, per call and per job.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import multiprocessing as mp
import os
import platform
import queue
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import embedded_server  # bench/: the server every process dials
from thread_profiles import profile_threads

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results" / "reconcile.json"
CRDS = ROOT / "config" / "crds"
SAMPLES = ROOT / "tests" / "fixtures" / "samples"  # the objects of Sedna's samples
LABEL = "incrementallearningjob.sedna.io/"
ALL_VARIANTS = ("gm", "gm-no-events", "gm-mutation-detector", "lean", "kopf")
TICK = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    """utime + stime of every thread of ``pid`` (children not included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def _process_switches(pid: int) -> int:
    """Context switches of every live thread of ``pid``."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += _switches(str(task))
        except OSError:  # the thread ended meanwhile
            continue
    return total


def _settled_cpu(pid: int, limit: float = 10.0) -> float:
    """The CPU seconds of ``pid`` once it stops working (< 1 tick per 0.25 s)."""
    deadline = time.monotonic() + limit
    cpu = _cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(0.25)
        now = _cpu_seconds(pid)
        if now - cpu <= 1 / TICK:
            return now
        cpu = now
    return cpu


def _quiet_logs(level: str = "WARNING") -> None:
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level=level)


# -- the API server ------------------------------------------------------------------


def _serve(url_q: Any, stop: Any) -> None:
    _quiet_logs()

    # No schema checks: the bench measures the GM (and builds its jobs with PyYAML,
    # which reads the sample's `02:00` timer as a number).
    srv = embedded_server.server(host="127.0.0.1", port=0, history=100_000, schema_validation=False)
    srv.start()
    srv.install_crds_from_dir(CRDS)
    url_q.put((srv.url, os.getpid()))
    stop.wait()
    srv.stop()


# -- the workload --------------------------------------------------------------------


def _sample(file: str) -> dict[str, Any]:
    import yaml

    return dict(yaml.safe_load((SAMPLES / file).read_text()))


def _prepare(url: str, ns: str) -> None:
    """The namespace, and the Models and the Dataset the sample job names."""
    from sedna.runtime.kube import DATASETS, MODELS, NAMESPACES, KubeClient

    kube = KubeClient(embedded_server.client(url))
    kube.resource(NAMESPACES).create(None, {"metadata": {"name": ns}})
    for name in ("initial-model", "deploy-model"):
        model = _sample("model_v1alpha1.yaml")
        model["metadata"]["name"] = name
        kube.resource(MODELS).create(ns, model)
    dataset = _sample("dataset_v1alpha1.yaml")
    dataset["metadata"]["name"] = "incremental-dataset"
    kube.resource(DATASETS).create(ns, dataset)


def _write(url: str, ns: str, n: int, writers: int, done_q: Any) -> None:
    """Create the N jobs from ``writers`` threads; report (start, end) on CLOCK_MONOTONIC."""
    from sedna.runtime.kube import INCREMENTAL_LEARNING_JOBS, KubeClient

    client = KubeClient(embedded_server.client(url)).resource(INCREMENTAL_LEARNING_JOBS)
    template = _sample("incrementallearningjob_v1alpha1.yaml")

    def work(w: int) -> None:
        for i in range(w, n, writers):
            job = copy.deepcopy(template)
            job["metadata"]["name"] = f"job-{i:05d}"
            client.create(ns, job)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(writers)]
    start = time.perf_counter()  # CLOCK_MONOTONIC: comparable across processes on Linux
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done_q.put((start, time.perf_counter()))


# -- controllers under test ------------------------------------------------------------


class _NoEvents:
    """Stands in for the EventRecorder (variant gm-no-events)."""

    def event(self, *a: Any, **k: Any) -> None: ...
    def normal(self, *a: Any, **k: Any) -> None: ...
    def warning(self, *a: Any, **k: Any) -> None: ...
    def flush(self, timeout: float = 5.0) -> None: ...
    def stop(self) -> None: ...


def _switches(task: str) -> int:
    """Voluntary + involuntary context switches of one task (``/proc/<pid>/task/<tid>``)."""
    n = 0
    for line in Path(task, "status").read_text().splitlines():
        if "ctxt_switches:" in line:
            n += int(line.split()[1])
    return n


def _thread_cpu() -> dict[str, tuple[float, int]]:
    """CPU seconds and context switches of each live thread of this process by name
    (numbered when repeated)."""
    out: dict[str, tuple[float, int]] = {}
    for t in threading.enumerate():
        task = f"/proc/self/task/{t.native_id}"
        try:
            fields = Path(task, "stat").read_text().rsplit(")", 1)[1]
            switches = _switches(task)
        except OSError:
            continue
        f = fields.split()
        name = t.name
        while name in out:
            name += "+"
        out[name] = ((int(f[11]) + int(f[12])) / TICK, switches)
    return out


def _write_thread_cpu(before: dict[str, tuple[float, int]], path: str) -> None:
    """The CPU and switches of each thread since ``before``, and the request/sync
    breakdown (``sync_breakdown``), as JSON at ``path``."""
    if path:
        import sync_breakdown

        used: dict[str, tuple[float, int]] = {}
        for n, (cpu, switches) in _thread_cpu().items():
            cpu0, switches0 = before.get(n, (0.0, 0))
            used[n] = (round(cpu - cpu0, 4), switches - switches0)
        doc = {"threads": used, "breakdown": sync_breakdown.snapshot()}
        Path(path).write_text(json.dumps(doc))


def _reset_breakdown() -> dict[str, tuple[float, int]]:
    """Start the measured window: per-thread CPU now, breakdown totals from zero."""
    if "sync_breakdown" in sys.modules:
        sys.modules["sync_breakdown"].reset()
    return _thread_cpu()


def _start_breakdown(threads_out: str) -> None:
    if threads_out:
        import sync_breakdown

        sync_breakdown.install()


def _run_gm(
    url: str,
    ns: str,
    variant: str,
    workers: int,
    ready_q: Any,
    stop: Any,
    profile: str,
    threads_out: str = "",
) -> None:
    if variant == "gm-mutation-detector":
        os.environ["SEDNA_CACHE_MUTATION_DETECTOR"] = "1"
    else:
        os.environ.pop("SEDNA_CACHE_MUTATION_DETECTOR", None)
    from loguru import logger

    logger.remove()
    logger.add(open(os.devnull, "w"), level="INFO")  # noqa: SIM115  # production level
    logger.add(sys.stderr, level="WARNING")

    import sedna_incremental_learning.plugin as il_plugin
    from dependency_injector import providers

    from sedna.manager import Manager
    from sedna.plugins.loader import discover_plugins
    from sedna.runtime import GMConfig, RuntimeContainer

    features: dict[str, Any] = {
        p.name: {"enabled": False} for p in discover_plugins() if p.name != il_plugin.FEATURE_NAME
    }
    features[il_plugin.FEATURE_NAME] = {"workers": workers}
    config = GMConfig.model_validate(
        {
            "namespace": ns,
            "websocket": {"address": "127.0.0.1", "port": 0, "auth": "none"},
            "metrics": {"enabled": False},
            "features": features,
        }
    )
    _start_breakdown(threads_out)
    container = RuntimeContainer(config=config)
    container.api_client.override(providers.Object(embedded_server.client(url)))
    if variant == "gm-no-events":
        container.events.override(providers.Object(_NoEvents()))
    merged = profile_threads(time.thread_time) if profile else None  # CPU, not waits
    manager = Manager(
        config, container=container, extra_plugins={il_plugin.FEATURE_NAME: il_plugin}
    )
    manager.start()
    before = _reset_breakdown()
    ready_q.put(os.getpid())
    stop.wait()
    _write_thread_cpu(before, threads_out)
    manager.stop()
    if merged is not None:
        merged().dump_stats(profile)


def _run_lean(
    url: str, ns: str, workers: int, ready_q: Any, stop: Any, threads_out: str = ""
) -> None:
    """DESIGN.md's "lean threaded loop": one raw watch, a queue, raw writes, nothing else."""
    _quiet_logs()
    from sedna.runtime.kube import (
        INCREMENTAL_LEARNING_JOBS,
        PODS,
        KubeClient,
    )

    _start_breakdown(threads_out)
    kube = KubeClient(embedded_server.client(url))
    jobs, pods = kube.resource(INCREMENTAL_LEARNING_JOBS), kube.resource(PODS)
    work: queue.Queue[dict[str, Any] | None] = queue.Queue()

    def watch() -> None:
        rv = jobs.list(ns)["metadata"]["resourceVersion"]
        for ev in jobs.watch(ns, resource_version=rv, timeout_seconds=3600):
            if ev["type"] == "ADDED":
                work.put(ev["object"])

    def worker() -> None:
        while (job := work.get()) is not None:
            meta = job["metadata"]
            name = meta["name"]
            owner = {
                "apiVersion": "sedna.io/v1alpha1",
                "kind": "IncrementalLearningJob",
                "name": name,
                "uid": meta["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
            pods.create(ns, _reference_pod(job, owner))
            cond = _waiting_condition()
            jobs.patch(ns, name, {"status": {"conditions": [cond]}}, subresource="status")

    threading.Thread(target=watch, name="lean-watch", daemon=True).start()
    threads = [
        threading.Thread(target=worker, name=f"lean-worker-{i}", daemon=True)
        for i in range(workers)
    ]
    for t in threads:
        t.start()
    time.sleep(0.5)  # the watch is open
    before = _reset_breakdown()
    ready_q.put(os.getpid())
    stop.wait()
    _write_thread_cpu(before, threads_out)


def _reference_pod(job: dict[str, Any], owner: dict[str, Any]) -> dict[str, Any]:
    """The inference pod of the reference controllers: the template plus labels/owner."""
    name = job["metadata"]["name"]
    spec = copy.deepcopy(job["spec"]["deploySpec"]["template"]["spec"])
    return {
        "metadata": {
            "generateName": f"{name}-inference-",
            "labels": {f"{LABEL}name": name, f"{LABEL}worker-type": "inference"},
            "ownerReferences": [owner],
        },
        "spec": spec,
    }


def _waiting_condition() -> dict[str, Any]:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "type": "Waiting",
        "stage": "Train",
        "status": "True",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }


def _controller(
    url: str,
    ns: str,
    variant: str,
    workers: int,
    ready_q: Any,
    stop: Any,
    profile: str,
    threads_out: str = "",
) -> None:
    sys.path.insert(0, str(BENCH))
    if variant == "lean":
        _run_lean(url, ns, workers, ready_q, stop, threads_out)
    elif variant == "kopf":
        import kopf_baseline

        kopf_baseline.run_operator(url, ns, workers, ready_q, stop)
    else:
        _run_gm(url, ns, variant, workers, ready_q, stop, profile, threads_out)


# -- measuring -----------------------------------------------------------------------


class _Progress:
    """Which jobs have their inference pod and their Train/Waiting condition."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.pod: set[str] = set()
        self.waiting: set[str] = set()
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.last = 0.0

    def note(self, group: set[str], name: str) -> None:
        with self.lock:
            group.add(name)
            if len(self.pod) >= self.n and len(self.waiting) >= self.n and not self.done.is_set():
                self.last = time.perf_counter()
                self.done.set()

    def count(self) -> int:
        with self.lock:
            return len(self.pod & self.waiting)


def _watch(client: Any, ns: str, on_event: Callable[[dict[str, Any]], None], stop: Any) -> Any:
    rv = client.list(ns)["metadata"]["resourceVersion"]
    stream = client.watch(ns, resource_version=rv, timeout_seconds=600, allow_bookmarks=False)

    def run() -> None:
        try:
            for ev in stream:
                if ev.get("type") in ("ADDED", "MODIFIED"):
                    on_event(ev["object"])
        except Exception:
            if not stop.is_set():
                raise

    threading.Thread(target=run, daemon=True).start()
    return stream


def _run_variant(
    ctx: Any, url: str, server_pid: int, variant: str, args: argparse.Namespace
) -> dict[str, Any]:
    from sedna.runtime.kube import (
        EVENTS,
        INCREMENTAL_LEARNING_JOBS,
        PODS,
        KubeClient,
    )

    ns = f"bench-{variant}-{int(time.time()) % 100000}"
    _prepare(url, ns)
    ready_q, done_q, stop = ctx.Queue(), ctx.Queue(), ctx.Event()
    profile = args.profile_out if args.profile else ""
    threads_out = ""
    if args.threads:
        threads_out = str(Path(tempfile.gettempdir()) / f"bench-threads-{os.getpid()}.json")
    proc = ctx.Process(
        target=_controller,
        args=(url, ns, variant, args.workers, ready_q, stop, profile, threads_out),
    )
    proc.start()
    try:
        pid = ready_q.get(timeout=60)
    except queue.Empty:
        proc.kill()
        raise SystemExit(f"{variant}: the controller did not start") from None

    progress = _Progress(args.jobs)
    kube = KubeClient(embedded_server.client(url))

    def on_pod(pod: dict[str, Any]) -> None:
        labels = pod["metadata"].get("labels") or {}
        if labels.get(f"{LABEL}worker-type") == "inference":
            progress.note(progress.pod, labels.get(f"{LABEL}name", ""))

    def on_job(job: dict[str, Any]) -> None:
        for c in (job.get("status") or {}).get("conditions") or []:
            if c.get("stage") == "Train" and c.get("type") == "Waiting":
                progress.note(progress.waiting, job["metadata"]["name"])
                return

    watch_stop = threading.Event()
    streams = [
        _watch(kube.resource(PODS), ns, on_pod, watch_stop),
        _watch(kube.resource(INCREMENTAL_LEARNING_JOBS), ns, on_job, watch_stop),
    ]
    time.sleep(1.0)  # let the controller settle (informers synced, threads idle)
    gm0, srv0, me0 = _cpu_seconds(pid), _cpu_seconds(server_pid), time.process_time()
    sw0 = _process_switches(pid)
    writer = ctx.Process(target=_write, args=(url, ns, args.jobs, args.writers, done_q))
    writer.start()
    finished = progress.done.wait(args.timeout)
    end = progress.last if finished else time.perf_counter()
    gm_done = _cpu_seconds(pid)
    sw_done = _process_switches(pid)
    me1 = time.process_time()
    gm1 = _settled_cpu(pid)  # work left behind (queued events) is the jobs' too
    srv1 = _cpu_seconds(server_pid)
    first, last_write = done_q.get(timeout=60)
    writer.join()
    watch_stop.set()
    for s in streams:
        s.close()
    stop.set()
    proc.join(60)
    if proc.is_alive():
        proc.kill()
    done = args.jobs if finished else progress.count()
    per_thread: dict[str, list[float]] = {}
    breakdown: dict[str, list[float]] = {}
    if threads_out and os.path.exists(threads_out):
        doc = json.loads(Path(threads_out).read_text())
        per_thread, breakdown = doc["threads"], doc["breakdown"]
        os.unlink(threads_out)
    time.sleep(0.5)  # queued events (recorder, kopf's posting) reach the server
    events = len(kube.resource(EVENTS).list(ns)["items"])
    wall = end - first
    return {
        "complete": finished,
        "jobs_done": done,
        "jobs_per_s": round(done / wall, 1),
        "seconds": round(wall, 2),
        "controller_cpu_ms_per_job": round((gm1 - gm0) / max(done, 1) * 1e3, 2),
        "controller_cpu_ms_per_job_at_done": round((gm_done - gm0) / max(done, 1) * 1e3, 2),
        "controller_switches_per_job_at_done": round((sw_done - sw0) / max(done, 1), 1),
        "server_cpu_ms_per_job": round((srv1 - srv0) / max(done, 1) * 1e3, 2),
        "watcher_cpu_ms_per_job": round((me1 - me0) / max(done, 1) * 1e3, 3),
        "writer_jobs_per_s": round(args.jobs / (last_write - first), 1),
        "lag_after_last_create_ms": round(max(0.0, end - last_write) * 1e3, 1),
        "events_per_job": round(events / max(done, 1), 2),
        **(
            {
                "thread_cpu_ms_per_job": {
                    n: round(c / max(done, 1) * 1e3, 3)
                    for n, (c, _) in sorted(per_thread.items(), key=lambda x: -x[1][0])
                    if c > 0
                },
                "thread_switches_per_job": {
                    n: round(s / max(done, 1), 2)
                    for n, (_, s) in sorted(per_thread.items(), key=lambda x: -x[1][1])
                    if s > 0
                },
            }
            if per_thread
            else {}
        ),
        **(
            {
                # thread CPU of each API request and of each sync's own Python (its
                # requests taken out): per call in µs, and per job in ms
                "breakdown_us_per_call": {
                    n: round(c / max(k, 1) * 1e6, 1) for n, (k, c) in sorted(breakdown.items())
                },
                "breakdown_calls_per_job": {
                    n: round(k / max(done, 1), 2) for n, (k, _) in sorted(breakdown.items())
                },
                "breakdown_ms_per_job": {
                    n: round(c / max(done, 1) * 1e3, 3) for n, (_, c) in sorted(breakdown.items())
                },
            }
            if breakdown
            else {}
        ),
    }


def _print_profile(path: str, top: int = 30) -> None:
    import pstats

    stats = pstats.Stats(path)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--workers", type=int, default=4, help="controller worker threads")
    parser.add_argument("--variants", default=",".join(ALL_VARIANTS))
    parser.add_argument("--repeat", type=int, default=3, help="runs per variant (median)")
    parser.add_argument("--timeout", type=float, default=90.0, help="per variant, seconds")
    parser.add_argument("--profile", action="store_true", help="cProfile the gm variant")
    parser.add_argument(
        "--threads",
        action="store_true",
        help="CPU per thread of the gm and lean controllers (from /proc) in the figures",
    )
    parser.add_argument("--profile-out", default="/tmp/bench_reconcile.prof")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    if args.profile:
        variants, args.repeat = ["gm"], 1
    notes: list[str] = []
    if "kopf" in variants and importlib.util.find_spec("kopf") is None:
        variants.remove("kopf")
        notes.append("kopf not installed (pip install kopf): kopf variant skipped")
    _quiet_logs()

    ctx = mp.get_context("spawn")
    url_q, server_stop = ctx.Queue(), ctx.Event()
    server = ctx.Process(target=_serve, args=(url_q, server_stop), daemon=True)
    server.start()
    url, server_pid = url_q.get(timeout=120)
    results: dict[str, Any] = {}
    try:
        # warm the server's paths (schema validation, watch fan-out) outside the figures
        _prepare(url, "warmup")
        warm_q = ctx.Queue()
        warm = ctx.Process(target=_write, args=(url, "warmup", 200, args.writers, warm_q))
        warm.start()
        warm_q.get(timeout=120)
        warm.join(10)
        # round-robin, so that a slow spell of the machine falls on every variant alike
        all_runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
        for _ in range(args.repeat):
            for variant in variants:
                all_runs[variant].append(_run_variant(ctx, url, server_pid, variant, args))
                print(f"{variant}: {all_runs[variant][-1]}", file=sys.stderr, flush=True)
        for variant, runs in all_runs.items():
            runs.sort(key=lambda r: r["jobs_per_s"])
            results[variant] = r = dict(runs[len(runs) // 2])  # the median run by jobs/s
            r["jobs_per_s_runs"] = [x["jobs_per_s"] for x in runs]
            r["controller_cpu_ms_per_job_runs"] = [x["controller_cpu_ms_per_job"] for x in runs]
            # the CPU figure is the median over the runs, not the median run's own
            r["controller_cpu_ms_per_job"] = statistics.median(r["controller_cpu_ms_per_job_runs"])
    finally:
        server_stop.set()
        server.join(10)

    if args.profile:
        _print_profile(args.profile_out)
        return 0
    kopf = results.get("kopf")
    if kopf:
        for v, r in results.items():
            if v != "kopf":
                # jobs/s is bounded by the 2-core box shared by all processes; CPU per job
                # is the steadier figure (DESIGN.md's "3x kopf" read as either)
                r["x_kopf_jobs_per_s"] = round(r["jobs_per_s"] / kopf["jobs_per_s"], 2)
                r["x_kopf_cpu"] = round(
                    kopf["controller_cpu_ms_per_job"] / r["controller_cpu_ms_per_job"], 2
                )
    # issue 16's target 4: gm at most 1/3 of kopf's CPU per job, gm-no-events at most
    # 1.6x the lean loop's (each from the median CPU of its runs)
    targets: dict[str, Any] = {}
    if kopf and "gm" in results:
        share = results["gm"]["controller_cpu_ms_per_job"] / kopf["controller_cpu_ms_per_job"]
        targets["gm_cpu_share_of_kopf"] = {"value": round(share, 2), "target": "<= 0.33"}
    if "lean" in results and "gm-no-events" in results:
        lean = results["lean"]["controller_cpu_ms_per_job"]
        times = results["gm-no-events"]["controller_cpu_ms_per_job"] / lean
        targets["gm_no_events_cpu_vs_lean"] = {"value": round(times, 2), "target": "<= 1.6"}
    print(
        f"\n{'variant':<22}{'jobs/s':>8}{'ctrl ms/job':>13}{'server ms/job':>15}"
        f"{'lag ms':>9}{'x kopf jobs/s':>15}{'x kopf cpu':>12}"
    )
    for v, r in results.items():
        print(
            f"{v:<22}{r['jobs_per_s']:>8}{r['controller_cpu_ms_per_job']:>13}"
            f"{r['server_cpu_ms_per_job']:>15}{r['lag_after_last_create_ms']:>9}"
            f"{r.get('x_kopf_jobs_per_s', ''):>15}{r.get('x_kopf_cpu', ''):>12}"
        )
    for name, t in targets.items():
        print(f"{name}: {t['value']} (target {t['target']})")
    doc = {
        "benchmark": "reconcile",
        "unit": "jobs_per_second",
        "workload": "IncrementalLearningJob created -> inference pod + Train/Waiting condition",
        "jobs": args.jobs,
        "writers": args.writers,
        "workers": args.workers,
        "repeat": args.repeat,
        "results": results,
        "targets": targets,
        "notes": [
            "server, controller and writers each in a child process; CPU from /proc/<pid>/stat",
            "server CPU includes serving the writers and the bench's two watches",
            "gm: production defaults (events on, mutation detector off, INFO logs to devnull)",
            "each variant's figures are its median run by jobs/s, except controller CPU per job:"
            " the median over its runs (controller_cpu_ms_per_job_runs)",
            "kopf 1.45 posts no Events by default (settings.posting.loggers=False)",
            *notes,
        ],
        "command": " ".join(["python bench/bench_reconcile.py", *sys.argv[1:]]),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
