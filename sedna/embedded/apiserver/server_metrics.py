"""``/metrics`` of the embedded API server (bearer token required, like every path but
the probes): open watches and what their caps refused, the store's write health.

kube-apiserver's names where it has one (``apiserver_longrunning_requests`` counts its
open watches); the rest are ours, prefixed ``sedna_apiserver_``.
"""

from __future__ import annotations

from .store_health import StoreHealth
from .watch_limits import WatchLimits

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def render(limits: WatchLimits, health: StoreHealth) -> str:
    """The Prometheus text exposition of the server's own figures."""
    rows = [
        ("apiserver_longrunning_requests", "gauge", "Open watches.",
         '{verb="WATCH"}', limits.open),
        ("sedna_apiserver_watch_clients", "gauge",
         "Clients (token and address) with at least one open watch.", "", len(limits.by_client)),
        ("sedna_apiserver_watches_refused_total", "counter",
         "Watches answered 429: the cap in all or per client was reached.", "", limits.refused),
        ("sedna_apiserver_watches_closed_slow_total", "counter",
         "Watches closed because their client did not keep up.", "", limits.closed_slow),
        ("sedna_apiserver_watch_queued_bytes", "gauge",
         "Bytes of events queued for watches, not yet written.", "", limits.queued_bytes),
        ("sedna_apiserver_store_writable", "gauge",
         "1 while the store takes writes, 0 after one failed (a full disk).", "",
         1 if health.ok else 0),
        ("sedna_apiserver_store_write_failures_total", "counter",
         "Store writes that failed (a full or failing disk).", "", health.failures),
    ]  # fmt: skip
    out = []
    for name, kind, text, labels, value in rows:
        out.append(f"# HELP {name} {text}\n# TYPE {name} {kind}\n{name}{labels} {value}\n")
    return "".join(out)
