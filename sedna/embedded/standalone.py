"""`sedna-gm apiserver`: only the embedded API server, for embedders and plugin authors.

It serves Sedna's CRDs with no GM, kubelet or LC beside it, so a manager of your own
(see the embedding guide) or `kubectl` can be pointed at it through the kubeconfig it
writes. With `state_dir` the objects are kept in SQLite across restarts, as in the
embedded mode; without, they live in memory.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from sedna.embedded.apiserver import APIServer
from sedna.embedded.apiserver.housekeeping import DEFAULT_INTERVAL as HOUSEKEEPING_INTERVAL
from sedna.embedded.crds import crd_manifests
from sedna.embedded.manifests import create_if_absent, load_manifests
from sedna.embedded.state_lock import StateLock
from sedna.runtime.kube import KubeClient, api_client_from_config
from sedna.runtime.stop_request import StopRequest

STATE_DB_NAME = "state.db"


class ListenError(Exception):
    """The server could not take its address; kept apart from the other OSErrors (a
    state dir or kubeconfig path that cannot be written) so each is reported as what it is."""


def serve(
    *,
    address: str,
    port: int,
    kubeconfig: Path,
    state_dir: Path | None,
    apply: Sequence[str],
    stop: StopRequest,
    announce: Callable[[str], None],
) -> None:
    """Run the server until `stop` is set; `announce` gets the one line saying where."""
    db: Path | None = None
    lock: StateLock | None = None
    if state_dir is not None:
        state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(state_dir, 0o700)  # also when an older run left it open
        lock = StateLock(state_dir)  # StateDirInUse when another process runs on it
        db = state_dir / STATE_DB_NAME
    try:
        _serve(address, port, kubeconfig, db, apply, stop, announce)
    finally:
        if lock is not None:
            lock.release()


def _serve(
    address: str,
    port: int,
    kubeconfig: Path,
    db: Path | None,
    apply: Sequence[str],
    stop: StopRequest,
    announce: Callable[[str], None],
) -> None:
    # kube-apiserver's Event TTL and PodGC, as in embedded mode (`housekeeping.py`)
    server = APIServer(address, port, db_path=db, housekeeping_interval=HOUSEKEEPING_INTERVAL)
    try:
        server.start()
    except OSError as exc:
        server.stop()
        raise ListenError(str(exc)) from exc
    try:
        for crd in crd_manifests():
            server.install_crd(crd)
        kubeconfig.parent.mkdir(parents=True, exist_ok=True)
        tmp = kubeconfig.with_name(kubeconfig.name + ".tmp")
        server.write_kubeconfig(tmp)
        os.chmod(tmp, 0o600)
        os.replace(tmp, kubeconfig)  # whoever waits for the file finds it whole
        if apply:
            kube = KubeClient(api_client_from_config(str(kubeconfig), ""))
            for manifest in load_manifests(list(apply)):
                create_if_absent(kube, manifest)
        announce(f"API server listening on {server.url}, kubeconfig {kubeconfig}")
        stop.wait()
    finally:
        server.stop()
