"""This GM against Sedna's Go GM with thousands of jobs already there: startup, memory, idle.

A seed API server state is made once: `--jobs` FederatedLearningJobs (Sedna's
surface-defect-detection example, renamed) and what a GM makes for each (its
aggregation Service and 3 worker pods), made by this GM, which is then stopped. Each
GM then runs in turns (never at once) on its own copy of that state (`sedna-gm
apiserver --state-dir`), all features as shipped, and the bench records:

- startup: process start to ready. This GM: `/readyz` answers 200 (informer caches
  synced, LC websocket listening). Sedna's Go GM: its last "Caches are synced for ..."
  line (client-go's `WaitForNamedCacheSync`, one per controller), by its own clock;
- RSS once settled (5 s after ready) and peak RSS (VmHWM) at the end;
- CPU over the first 5 s after ready (the resync of every job: a GM that writes then
  shows it here), then idle CPU ms/s over `--idle-seconds` with nothing changing.

Each figure is the median of `--rounds` with its range; ratios are this GM's over Go's.
Growth with size: run with `--jobs` at one tenth, one third and the full size.

Both Python processes (this GM, the API server) start with their bytecode cached, as
an installed GM does (pip compiles it at install, and the image ships it): the seed
run writes it into a cache folder of the bench's own (`PYTHONPYCACHEPREFIX`), so a
`PYTHONDONTWRITEBYTECODE` in the caller's environment, or a source checkout that was
never compiled, does not make every round compile every module again (about 0.35 s
of each start on a 2-core machine, a cost no installed GM pays).

Run: `python bench/bench_startup_vs_sedna.py [--jobs 2000] [--rounds 3]
[--idle-seconds 20]`. Needs Sedna's Go GM (`$SEDNA_GO_GM_BIN`, else
`../shared/sedna-bin/sedna-gm` beside the checkout): without it, it says so and exits 0.
Writes `bench/results/startup_vs_sedna.json` (one entry per `--jobs`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import threading
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import bench_vs_sedna as vs

RESULTS = vs.BENCH / "results" / "startup_vs_sedna.json"
SETTLE_SECONDS = 5.0
_SYNCED = re.compile(r"^I\d{4} (\d\d):(\d\d):(\d\d\.\d+) .*Caches are synced for")


def seed(folder: Path, jobs: int) -> Path:
    """A stopped API server state holding `jobs` FL jobs and their workers."""
    state = folder / "seed"
    state.mkdir()
    api, kubeconfig = vs.start_apiserver(state)
    gm: vs.Proc | None = None
    try:
        gm = vs.start_ours(state, kubeconfig)
        kind = vs.KINDS["fl"]
        creator = threading.Thread(target=vs.create_inputs, args=(kubeconfig, "bench", kind, jobs))
        creator.start()
        vs.wait_for(
            lambda: vs.done_jobs(kubeconfig, "bench", kind, jobs) >= jobs,
            f"{jobs} seeded jobs",
            3600,
        )
        creator.join()
    finally:
        if gm is not None:
            gm.stop()
        api.stop()
    return state / "state"


def _ready_ours(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def _go_synced_at(log: Path, controllers: int) -> float | None:
    """Wall time (epoch) of the last "Caches are synced" line once all controllers have one."""
    stamps = []
    for line in log.read_text(errors="replace").splitlines():
        if m := _SYNCED.match(line):
            stamps.append(int(m[1]) * 3600 + int(m[2]) * 60 + float(m[3]))
    if len(stamps) < controllers:
        return None
    now = datetime.now(UTC)
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()
    return midnight + max(stamps)


def cache_bytecode(folder: Path) -> Path:
    """Let the GM and API server processes started from here write and read their
    bytecode in `folder` (see the module docstring)."""
    cache = folder / "pycache"
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(cache)
    return cache


def one_round(gm: str, seed_state: Path, idle_s: float, go: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix=f"startup-{gm}-") as tmp:
        folder = Path(tmp)
        shutil.copytree(seed_state, folder / "state")
        api, kubeconfig = vs.start_apiserver(folder)
        proc: vs.Proc | None = None
        try:
            started = time.time()
            if gm == "ours":
                proc = vs.start_ours(folder, kubeconfig, wait=False)
                port = proc.metrics_port
                vs.wait_for(lambda: _ready_ours(port), "our GM's /readyz", 300, step=0.01)
                ready = time.time()
            else:
                proc = vs.start_go(folder, kubeconfig, go)
                synced = vs.wait_for(
                    lambda: _go_synced_at(folder / "gm.log", 8), "the Go GM's caches", 300
                )
                ready = float(synced)
            out = {"startup_s": ready - started}
            cpu0 = vs.cpu_seconds(proc.pid)
            time.sleep(SETTLE_SECONDS)
            out["settle_cpu_ms"] = 1000 * (vs.cpu_seconds(proc.pid) - cpu0)
            out["settled_rss_mb"] = vs.memory_mb(proc.pid, "VmRSS")
            out["idle_cpu_ms_s"] = vs.idle_cpu(proc.pid, idle_s)
            out["peak_rss_mb"] = vs.memory_mb(proc.pid, "VmHWM")
            return out
        finally:
            if proc is not None:
                proc.stop()
            api.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--idle-seconds", type=float, default=20.0)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    go = vs.go_gm_binary()
    if go is None:
        print("Sedna's Go GM not found: set SEDNA_GO_GM_BIN or put it at ../shared/sedna-bin/")
        return 0
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="startup-seed-") as tmp:
        cache_bytecode(Path(tmp))  # the seed run compiles; the rounds read it
        t0 = time.monotonic()
        seed_state = seed(Path(tmp), args.jobs)
        print(f"seeded {args.jobs} jobs in {time.monotonic() - t0:.0f} s", flush=True)
        runs: dict[str, list[dict[str, float]]] = {"go": [], "ours": []}
        for r in range(args.rounds):
            for gm in ("go", "ours"):
                got = one_round(gm, seed_state, args.idle_seconds, go)
                runs[gm].append(got)
                shown = ", ".join(f"{k} {v:.2f}" for k, v in got.items())
                print(f"{args.jobs} jobs, round {r + 1} {gm}: {shown}", flush=True)
    figures = {
        gm: {k: vs.summary([run[k] for run in rs]) for k in rs[0]} for gm, rs in runs.items()
    }
    ratios = {
        k: round(figures["ours"][k]["median"] / figures["go"][k]["median"], 2)
        for k in figures["ours"]
        if figures["go"][k]["median"]
    }
    entry = {
        "jobs": args.jobs,
        "rounds": args.rounds,
        "idle_seconds": args.idle_seconds,
        "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}",
        "load_average": {"start": round(load_before[0], 2), "end": round(os.getloadavg()[0], 2)},
        "python_bytecode": "cached, as installed",
        "date": datetime.now(UTC).date().isoformat(),
        "figures": figures,
        "ratio_ours_to_go": ratios,
    }
    print(json.dumps(entry, indent=1))
    previous = json.loads(args.out.read_text()) if args.out.exists() else {}
    previous[str(args.jobs)] = entry
    args.out.write_text(json.dumps(previous, indent=1) + "\n")
    print(f"recorded in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
