"""`sedna-gm plugins | head -3`: a reader that goes away ends the command quietly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sedna.cli import EXIT_BROKEN_PIPE

PROJECT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("command", ["plugins", "check-config", "rbac"])
def test_a_closed_stdout_exits_141_without_a_traceback(command: str) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line is written
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "sedna.cli", command, "--config", "config/gm.yaml"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            cwd=PROJECT,
        )
    finally:
        os.close(write_end)
    assert proc.returncode == EXIT_BROKEN_PIPE == 141
    assert proc.stderr == ""


def test_a_reader_of_the_first_lines_gets_them() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "sedna.cli", "plugins", "--config", "config/gm.yaml"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=PROJECT,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    assert proc.wait(timeout=60) in (0, EXIT_BROKEN_PIPE)
    assert first.split() == ["NAME", "DISTRIBUTION", "VERSION", "KINDS", "ENABLED"]
    assert "Traceback" not in proc.stderr.read()
    proc.stderr.close()
