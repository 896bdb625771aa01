"""What the suite may read from outside the repository, and the guard that keeps it so.

A bare clone must pass the whole suite. Only tests whose point is compatibility with
Sedna's own files or binaries read anything beside the checkout, and they say so with a
marker and skip, with one reason, when those files are absent:

- ``sedna_reference``: Sedna's CRDs and samples as Sedna ships them
  (``$SEDNA_REFERENCE_DIR``, else ``../shared/sedna-reference`` beside the checkout);
- ``sedna_bin``: Sedna's own binaries (``$SEDNA_LC_BIN`` / ``$SEDNA_GO_GM_BIN``, else
  ``../shared/sedna-bin/``).

The guard is an audit hook (PEP 578): every ``open``, directory listing and process start
of the test process is checked, in every thread, against the checkout's siblings and the
folders those variables name. A test without the marker that touches one fails, naming
the path, so a test cannot come to depend on ``../shared`` unnoticed.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CRDS_DIR = PROJECT_ROOT / "config" / "crds"
SAMPLES_DIR = PROJECT_ROOT / "tests" / "fixtures" / "samples"

REFERENCE_ENV = "SEDNA_REFERENCE_DIR"
LC_BIN_ENV = "SEDNA_LC_BIN"
GO_GM_BIN_ENV = "SEDNA_GO_GM_BIN"
MARKERS = ("sedna_reference", "sedna_bin")


def reference_dir() -> Path:
    """Sedna's reference data: CRDs (``crds/``) and samples (``crd-samples/``)."""
    return Path(os.environ.get(REFERENCE_ENV) or PROJECT_ROOT.parent / "shared" / "sedna-reference")


def sedna_bin(name: str) -> Path:
    """One of Sedna's binaries (``sedna-lc`` or ``sedna-gm``)."""
    env = {"sedna-lc": LC_BIN_ENV, "sedna-gm": GO_GM_BIN_ENV}[name]
    return Path(os.environ.get(env) or PROJECT_ROOT.parent / "shared" / "sedna-bin" / name)


def reference_missing() -> str | None:
    """Why the reference data cannot be used, or None when it can."""
    ref = reference_dir()
    if (ref / "crds").is_dir() and (ref / "crd-samples").is_dir():
        return None
    return (
        f"needs Sedna's reference CRDs and samples (crds/, crd-samples/): {ref} not found "
        f"(set {REFERENCE_ENV})"
    )


def _foreign_prefixes() -> tuple[str, ...]:
    """Folders a test may only read with a marker."""
    prefixes: list[str] = []
    parent = PROJECT_ROOT.parent
    if parent != Path(parent.anchor):  # a checkout at / has no siblings to guard
        prefixes.append(str(parent) + os.sep)
    for env in (REFERENCE_ENV, LC_BIN_ENV, GO_GM_BIN_ENV):
        value = os.environ.get(env)
        if value:
            prefixes.append(os.path.normpath(os.path.abspath(value)))
    return tuple(prefixes)


class OutsideReads:
    """Collects reads outside the repository for the test that is running."""

    def __init__(self) -> None:
        self._foreign = _foreign_prefixes()
        self._root = str(PROJECT_ROOT)
        own = [self._root + os.sep]
        tmp = os.path.normpath(tempfile.gettempdir()) + os.sep
        if not (self._root + os.sep).startswith(tmp):  # a checkout in /tmp keeps its guard
            own.append(tmp)  # tests' own scratch files, wherever TMPDIR points
        self._own = tuple(own)
        self._lock = threading.Lock()
        self._seen: list[str] = []
        self.allowed = True  # outside a test (collection, session set-up) nothing is checked

    def _outside(self, raw: Any) -> str | None:
        if isinstance(raw, int) or raw is None:
            return None
        try:
            path = os.fsdecode(raw)
        except TypeError:
            return None
        if not path.startswith(os.sep):
            if os.sep not in path and not path.startswith(".."):
                return None  # a bare file name: the working directory, not a sibling
            path = os.path.join(os.getcwd(), path)
        path = os.path.normpath(path)
        if path == self._root or path.startswith(self._own):
            return None
        if any(path == p.rstrip(os.sep) or path.startswith(p) for p in self._foreign):
            return path
        return None

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if self.allowed or event not in _EVENTS:
            return
        candidates: tuple[Any, ...]
        if event == "subprocess.Popen":
            executable, argv = args[0], args[1]
            candidates = (executable, *(argv if isinstance(argv, list | tuple) else (argv,)))
        else:
            candidates = args[:1]
        for raw in candidates:
            if isinstance(raw, str | bytes | os.PathLike):
                path = self._outside(raw)
                if path is not None:
                    with self._lock:
                        if len(self._seen) < 20:
                            self._seen.append(path)

    def take(self) -> list[str]:
        with self._lock:
            seen, self._seen = self._seen, []
        return seen


_EVENTS = frozenset({"open", "os.listdir", "os.scandir", "glob.glob", "subprocess.Popen"})


class OutsideReadGuard:
    """The pytest plugin: a test that read beside the checkout without one of `MARKERS`
    fails at teardown, naming the paths."""

    def __init__(self) -> None:
        self.reads = OutsideReads()
        sys.addaudithook(self.reads.hook)  # for the process's life: hooks cannot be removed

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        self.reads.take()
        self.reads.allowed = any(item.get_closest_marker(m) for m in MARKERS)
        try:
            yield
        finally:
            self.reads.allowed = True

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Iterator[None]:
        outcome = yield
        if call.when != "teardown" or self.reads.allowed:
            return
        seen = self.reads.take()
        report = outcome.get_result()
        if seen and report.passed:
            report.outcome = "failed"
            markers = " or ".join(f"@pytest.mark.{m}" for m in MARKERS)
            paths = ", ".join(sorted(set(seen)))
            report.longrepr = (
                f"{item.nodeid} read outside the repository without {markers}: {paths}"
            )
