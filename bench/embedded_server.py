"""The benchmarks' embedded API server: HTTPS with a fixed token, as every client here dials it.

Every process of a benchmark (server, writers, controllers) finds the server's
certificate in the directory named by $SEDNA_BENCH_PKI, which the first caller of
`pki_dir` sets, so child processes inherit it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

BENCH_TOKEN = "sedna-bench-token"  # loopback-only benchmark servers


def pki_dir() -> Path:
    path = os.environ.get("SEDNA_BENCH_PKI")
    if not path:
        path = tempfile.mkdtemp(prefix="sedna-bench-pki-")
        os.environ["SEDNA_BENCH_PKI"] = path
    return Path(path)


def ca_file() -> str:
    return str(pki_dir() / "ca.crt")  # the CA that signs the serving certificate


def server(**kwargs: Any) -> Any:
    from sedna.embedded.apiserver import APIServer

    return APIServer(tokens=[BENCH_TOKEN], pki_dir=pki_dir(), **kwargs)


def client(url: str, **kwargs: Any) -> Any:
    from sedna.runtime.kube import api_client_for_url

    return api_client_for_url(url, token=BENCH_TOKEN, ca_cert=ca_file(), **kwargs)


def configuration(url: str) -> Any:
    import kubernetes

    cfg = kubernetes.client.Configuration()
    cfg.host = url
    cfg.ssl_ca_cert = ca_file()
    cfg.api_key = {"authorization": BENCH_TOKEN}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    return cfg


pki_dir()  # at import: the benchmark's child processes inherit the directory
