"""Readiness check: can the GM reach its API server right now?

A GM that cannot reach its API (server down, certificate expired, token refused) does
nothing useful, and its `/readyz` must say so, naming the check, or the kubelet and
load balancers keep trusting it. The check asks the server only when asked itself
(a probe, a scrape): an idle GM sends nothing. One request at a time, bounded by a
short timeout, and the answer is reused for a short while, so a burst of probes costs
the API one request.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from sedna.runtime.kube import ApiError, KubeClient

__all__ = ["APIReachability"]

DEFAULT_TIMEOUT_SECONDS = 2.0
DEFAULT_CACHE_SECONDS = 2.0
# authenticated (unlike /version or /readyz) and tiny: TLS, token and server in one
PROBE_PATH = "/api"


class APIReachability:
    """A readiness check (`HealthServer.add_readiness`): `(True, "")` or `(False, why)`."""

    def __init__(
        self,
        kube: KubeClient,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        cache_seconds: float = DEFAULT_CACHE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._kube = kube
        self._timeout = timeout
        self._cache_seconds = cache_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._answer: tuple[bool, str] | None = None
        self._at = 0.0
        self.probes = 0  # requests sent (tests and debugging)

    def __call__(self) -> tuple[bool, str]:
        # probes that arrive while one is in flight wait for it and share its answer
        with self._lock:
            if self._answer is not None and self._clock() - self._at < self._cache_seconds:
                return self._answer
            self._answer = self._probe()
            self._at = self._clock()
            return self._answer

    def _probe(self) -> tuple[bool, str]:
        self.probes += 1
        host = self._kube.api_client.configuration.host
        try:
            self._kube.request("GET", PROBE_PATH, timeout=(self._timeout, self._timeout))
        except ApiError as exc:
            return False, f"cannot reach the API server {host}: {_short(exc)}"
        except Exception as exc:  # anything else the transport raises is a failure too
            return False, f"cannot reach the API server {host}: {type(exc).__name__}"
        return True, ""


def _short(exc: ApiError) -> str:
    """One line, bounded: a TLS error's text can run long."""
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."
