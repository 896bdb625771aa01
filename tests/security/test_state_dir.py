"""One process per state directory: a second GM or API server on it is refused.

Two GMs on one stateDir each loaded the SQLite store into memory and then wrote over
each other. These tests run real processes: the holder is `sedna-gm apiserver`, the
contenders a GM on a gm.yaml naming the same directory and another `sedna-gm
apiserver`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from sedna.embedded.state_lock import LOCK_FILE_NAME, StateDirInUse, StateLock
from sedna.testing import wait_until

PROJECT = Path(__file__).resolve().parents[2]


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "sedna.cli", *args]


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("SEDNA_GM_CONFIG", None)
    return env


@pytest.fixture()
def holder(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    state = tmp_path / "state"
    kubeconfig = tmp_path / "holder-kubeconfig"
    proc = subprocess.Popen(
        _cli(
            "apiserver", "--port", "0", "--state-dir", str(state), "--kubeconfig", str(kubeconfig)
        ),
        cwd=PROJECT,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: kubeconfig.exists() or proc.poll() is not None, timeout=60)
        assert proc.poll() is None, "the first API server did not start"
        yield proc, state
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _gm_config(tmp_path: Path, state: Path) -> Path:
    cfg = yaml.safe_load((PROJECT / "config" / "gm.yaml").read_text())
    cfg["embedded"]["stateDir"] = str(state)
    cfg["embedded"]["port"] = 0
    cfg["embedded"]["apply"] = []
    cfg["websocket"]["port"] = 0
    cfg["metrics"]["port"] = 0
    path = tmp_path / "gm.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def _refused(proc: subprocess.CompletedProcess[str], pid: int, state: Path) -> None:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1, proc.stderr
    assert f"pid {pid}" in lines[0] and str(state / LOCK_FILE_NAME) in lines[0], lines[0]


def test_a_second_gm_on_the_same_state_dir_exits_2_naming_the_holder(
    holder: tuple[subprocess.Popen[bytes], Path], tmp_path: Path
) -> None:
    proc, state = holder
    config = _gm_config(tmp_path, state)
    second = subprocess.run(
        _cli("--config", str(config)),
        cwd=PROJECT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    _refused(second, proc.pid, state)
    assert proc.poll() is None  # the first one runs on


def test_a_second_apiserver_on_the_same_state_dir_exits_2(
    holder: tuple[subprocess.Popen[bytes], Path], tmp_path: Path
) -> None:
    proc, state = holder
    kubeconfig = tmp_path / "second-kubeconfig"
    second = subprocess.run(
        _cli(
            "apiserver", "--port", "0", "--state-dir", str(state), "--kubeconfig", str(kubeconfig)
        ),
        cwd=PROJECT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    _refused(second, proc.pid, state)
    assert not kubeconfig.exists()
    # once the holder is gone, whatever way it ended, the directory is free again
    proc.kill()
    proc.wait()
    StateLock(state).release()


def test_the_lock_is_exclusive_within_a_process_too(tmp_path: Path) -> None:
    first = StateLock(tmp_path)
    with pytest.raises(StateDirInUse) as err:
        StateLock(tmp_path)
    assert f"pid {os.getpid()}" in str(err.value)
    assert (tmp_path / LOCK_FILE_NAME).stat().st_mode & 0o777 == 0o600
    first.release()
    first.release()
    StateLock(tmp_path).release()


def test_a_lock_file_with_garbage_names_no_pid(tmp_path: Path) -> None:
    import fcntl

    path = tmp_path / LOCK_FILE_NAME
    path.write_bytes(b"\xff\x00not a pid" * 100)
    with open(path, "rb+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        with pytest.raises(StateDirInUse) as err:
            StateLock(tmp_path)
    assert "pid unknown" in str(err.value)
    assert len(str(err.value)) < 300
