"""``/readyz`` of the embedded API server: kube-apiserver's format, the store's health.

kube-apiserver's ``/readyz`` fails (500, ``[-]etcd failed``) while its storage is
unusable; ours fails while the store cannot write (a full disk), naming the store and
why, and passes again by itself once a write or the store's probe succeeds.
"""

from __future__ import annotations

from .store_health import StoreHealth


def readyz(health: StoreHealth, verbose: bool) -> tuple[int, str]:
    """HTTP status and text body, as kube-apiserver writes them."""
    if health.ok:
        if verbose:
            return 200, "[+]ping ok\n[+]store ok\nreadyz check passed\n"
        return 200, "ok"
    return 500, f"[+]ping ok\n[-]store failed: {health.error}\nreadyz check failed\n"
