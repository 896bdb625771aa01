"""Container logs: written by the simulated kubelet, served by the API server.

A real API server answers `kubectl logs` by proxying pods/log to the kubelet of the
pod's node. The embedded kubelet and server live in one process and share a
directory instead (`<stateDir>/logs`): one file per container, named
`<namespace>_<pod>_<container>.log`. Object names are DNS labels or subdomains and
never hold "_", so the name cannot be ambiguous. A deleted pod's files go with it, as a
kubelet removes a deleted pod's container logs (`remove_pod_logs`). The API server
refuses other container names; `log_path` refuses any name with "/" or ".." (or
empty) too, so an object that got past it, say from an older state directory, cannot
point outside the directory. Logs are as private as the state directory they live in
(the directory 0700, every file 0600): a container's output may hold anything.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any


def log_path(log_dir: Path, namespace: str, pod: str, container: str) -> Path:
    """Where the log of one container of one pod lives; ValueError for a name that is
    not a plain file name part."""
    for what, name in (("namespace", namespace), ("pod", pod), ("container", container)):
        if not name or "/" in name or "\\" in name or ".." in name or "\0" in name:
            raise ValueError(f"{what} name {name!r} cannot name a log file")
    return log_dir / f"{namespace}_{pod}_{container}.log"


def ensure_log_dir(log_dir: Path) -> None:
    """Create the log directory owner-only, and close one an older version left open."""
    log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    if log_dir.stat().st_mode & 0o077:
        os.chmod(log_dir, 0o700)


def secure_log_dir(log_dir: Path) -> None:
    """`ensure_log_dir`, and every log file in it made owner-only (older versions made
    them 0644); run once at start."""
    ensure_log_dir(log_dir)
    with os.scandir(log_dir) as entries:
        for entry in entries:
            with contextlib.suppress(OSError):
                if entry.is_file(follow_symlinks=False) and entry.stat().st_mode & 0o077:
                    os.chmod(entry.path, 0o600)


def open_log(path: Path) -> int:
    """A descriptor appending to a log file that is owner-only from its first byte."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with contextlib.suppress(OSError):
        os.fchmod(fd, 0o600)  # a file an older version created 0644
    return fd


def append_line(log_dir: Path, namespace: str, pod: str, container: str, text: str) -> None:
    """Add a line to a container's log; a log that cannot be written is not worth a
    failed pod (the kubelet goes on, as a real one does when its disk is full)."""
    with contextlib.suppress(OSError, ValueError):
        ensure_log_dir(log_dir)
        fd = open_log(log_path(log_dir, namespace, pod, container))
        with open(fd, "a", encoding="utf-8") as f:
            f.write(text.rstrip("\n") + "\n")


def container_names(pod: Mapping[str, Any]) -> list[str]:
    """The names of every container of a pod spec (init and ephemeral ones too)."""
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        return []
    names: list[str] = []
    for field in ("initContainers", "containers", "ephemeralContainers"):
        items = spec.get(field)
        for c in items if isinstance(items, list) else ():
            name = c.get("name") if isinstance(c, Mapping) else None
            if isinstance(name, str) and name and name not in names:
                names.append(name)
    return names


def remove_pod_logs(log_dir: Path, namespace: str, pod: str, containers: Iterable[str]) -> int:
    """Delete the log files of a pod's containers; returns how many there were."""
    removed = 0
    for container in containers:
        try:
            log_path(log_dir, namespace, pod, container).unlink()
        except (OSError, ValueError):
            continue
        removed += 1
    return removed
