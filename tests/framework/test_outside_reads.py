"""A bare clone passes the suite: nothing a test needs lives beside the checkout unless the
test says so (`support.outside`), and the project's samples are Sedna's."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.outside import PROJECT_ROOT, SAMPLES_DIR, OutsideReads

from sedna.embedded import kube_yaml

TESTS = PROJECT_ROOT / "tests"
# a path beside the checkout spelled in code: `.. / "shared"`, "../shared", parents[N].parent
_BESIDE = re.compile(r"""["']\.\./shared|/\s*["']shared["']|parents\[\d\]\.parent\b""")


@pytest.mark.sedna_reference
def test_the_project_samples_are_sednas(sedna_reference: Path) -> None:
    """The suite reads `tests/fixtures/samples`; with Sedna's files at hand, they must hold
    the same objects, so every test of a sample tests Sedna's."""
    theirs = sorted((sedna_reference / "crd-samples").glob("*.yaml"))
    assert {p.name for p in theirs} == {p.name for p in SAMPLES_DIR.glob("*.yaml")}
    for path in theirs:
        mine = list(kube_yaml.load_all((SAMPLES_DIR / path.name).read_text()))
        assert [d for d in mine if d] == [d for d in kube_yaml.load_all(path.read_text()) if d], (
            path.name
        )


def test_no_test_spells_a_path_beside_the_checkout() -> None:
    """Only `support.outside` knows where Sedna's files are: a test that builds such a path
    itself would bypass the marker and the skip."""
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        if path == TESTS / "support" / "outside.py" or path == Path(__file__):
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if _BESIDE.search(line):
                offenders.append(f"{path.relative_to(PROJECT_ROOT)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_the_guard_tells_beside_from_inside(tmp_path: Path) -> None:
    reads = OutsideReads()
    reads.allowed = False
    beside = PROJECT_ROOT.parent / "shared" / "sedna-reference" / "crds"
    reads.hook("open", (str(beside / "x.yaml"), "r", 0))
    reads.hook("os.scandir", (os.fsencode(beside),))
    reads.hook("subprocess.Popen", ("sh", ["sh", "-c", "true"], None, None))
    reads.hook("subprocess.Popen", (str(beside), [str(beside)], None, None))
    reads.hook("open", (str(PROJECT_ROOT / "config" / "gm.yaml"), "r", 0))
    reads.hook("open", (str(tmp_path / "f"), "w", 0))
    reads.hook("open", (3, "r", 0))  # a file descriptor
    reads.hook("open", ("gm.yaml", "r", 0))
    reads.hook("open", (str(PROJECT_ROOT) + "-other/x", "r", 0))  # a sibling, not inside
    reads.hook("sys._getframe", (None,))
    seen = reads.take()
    assert seen == [
        str(beside / "x.yaml"),
        str(beside),
        str(beside),
        str(beside),
        str(PROJECT_ROOT) + "-other/x",
    ]
    assert reads.take() == []
    reads.allowed = True
    reads.hook("open", (str(beside / "x.yaml"), "r", 0))
    assert reads.take() == []


def _run_pytest(folder: Path, source: str) -> subprocess.CompletedProcess[str]:
    (folder / "conftest.py").write_text(
        "from support.outside import OutsideReadGuard\n\n"
        "def pytest_configure(config):\n"
        "    config.pluginmanager.register(OutsideReadGuard(), 'outside-read-guard')\n"
    )
    (folder / "test_reads.py").write_text(textwrap.dedent(source))
    (folder / "pytest.ini").write_text(
        "[pytest]\nmarkers =\n    sedna_reference: x\n    sedna_bin: x\n"
    )
    env = dict(os.environ, PYTHONPATH=str(TESTS))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_an_unmarked_test_that_reads_beside_the_checkout_fails(tmp_path: Path) -> None:
    """End to end, in a pytest of its own: the unmarked read fails its test (even from
    another thread, as a GM's would), the marked one passes."""
    proc = _run_pytest(
        tmp_path,
        f"""
        import threading
        import pytest

        BESIDE = {str(PROJECT_ROOT.parent / "shared" / "nothing-here")!r}

        def _read():
            try:
                open(BESIDE).close()
            except OSError:
                pass

        def test_unmarked():
            t = threading.Thread(target=_read)
            t.start()
            t.join()

        @pytest.mark.sedna_reference
        def test_marked():
            _read()

        def test_inside():
            open(__file__).close()
        """,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "3 passed, 1 error" in out, out  # test_unmarked: passed, then errors at teardown
    assert "test_reads.py::test_unmarked read outside the repository without" in out, out
    assert "nothing-here" in out
