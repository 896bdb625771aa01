"""Sedna's Go GM against the embedded API server: how often it lists each kind.

Sedna's Go GM (client-go v0.30.7) watches every Sedna kind, but its scheme lacks
ObjectSearchService, so it cannot decode a BOOKMARK of that kind: each bookmark breaks
that watch and client-go lists the kind again. kube-apiserver sends bookmarks about
once a minute and 2 s before a watch's deadline; an embedded server that sent one
every idle second made the Go GM relist ObjectSearchServices every 1-4 s. This bench
runs the Go GM for ``--seconds`` against a fresh embedded server at each
``--frequencies`` (bookmark frequency in seconds; 60 is kube's) and prints the lists
and watches per kind it made. Only the Go GM talks to the server (the CRDs are
installed in process), so every call counted is its own; the server runs in this
process, which matters to no figure here.

The Go GM is ``$SEDNA_GO_GM_BIN``, else ``../shared/sedna-bin/sedna-gm`` next to the
project. Run: ``python bench/bench_go_gm_watch.py [--seconds 30] [--frequencies
1,60]``. Writes ``bench/results/go_gm_watch.json``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results" / "go_gm_watch.json"


def _go_gm() -> Path | None:
    env = os.environ.get("SEDNA_GO_GM_BIN")
    path = Path(env) if env else BENCH.parent.parent / "shared" / "sedna-bin" / "sedna-gm"
    return path if path.is_file() and os.access(path, os.X_OK) else None


def run(binary: Path, frequency: float, seconds: float) -> dict[str, dict[str, int]]:
    """The Go GM's lists and watches per resource in `seconds`."""
    from sedna.embedded.apiserver import APIServer
    from sedna.embedded.crds import crd_manifests

    srv = APIServer("127.0.0.1", 0, schema_validation=False, bookmark_frequency=frequency)
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    record = srv.requests.record

    def counting(agent: str, verb: str, group: str, resource: str, ns: str | None) -> None:
        counts[(resource, verb)] += 1
        record(agent, verb, group, resource, ns)

    srv.requests.record = counting  # type: ignore[method-assign]
    srv.start()
    with tempfile.TemporaryDirectory(prefix="bench-go-gm-") as tmp:
        try:
            for crd in crd_manifests():
                srv.install_crd(crd)
            kubeconfig = Path(tmp) / "kubeconfig"
            srv.write_kubeconfig(kubeconfig)
            config = Path(tmp) / "gm.yaml"
            config.write_text(
                f"kubeConfig: {kubeconfig}\nwebsocket:\n  address: 127.0.0.1\n  port: 0\n"
                "localController:\n  server: http://127.0.0.1:9100\n"
            )
            with (Path(tmp) / "gm.log").open("w") as log:
                proc = subprocess.Popen(
                    [str(binary), "--config", str(config)], stdout=log, stderr=subprocess.STDOUT
                )
                try:
                    time.sleep(seconds)
                finally:
                    proc.terminate()
                    proc.wait(timeout=30)
        finally:
            srv.stop()
    out: dict[str, dict[str, int]] = {}
    for (resource, verb), n in sorted(counts.items()):
        if verb in ("list", "watch"):
            out.setdefault(resource, {})[verb] = n
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--frequencies", default="1,60")
    args = parser.parse_args()
    binary = _go_gm()
    if binary is None:
        print("Sedna's Go GM not found: set SEDNA_GO_GM_BIN", file=sys.stderr)
        return 2
    results: dict[str, Any] = {}
    for f in (float(x) for x in args.frequencies.split(",")):
        per_kind = run(binary, f, args.seconds)
        results[f"bookmark_every_{f:g}s"] = per_kind
        print(f"bookmark frequency {f:g} s, {args.seconds:g} s of the Go GM: lists (watches)")
        for resource, calls in per_kind.items():
            print(f"  {resource:<28} {calls.get('list', 0):>4} ({calls.get('watch', 0)})")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "benchmark": "go_gm_watch",
                "unit": "calls",
                "seconds": args.seconds,
                "results": results,
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
