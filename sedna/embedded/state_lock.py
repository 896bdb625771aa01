"""One writer per state directory.

Two processes on one `stateDir` would each load the SQLite store into memory and
then write over each other's objects and resourceVersions. A second one is refused at
start instead: the first holds an exclusive `flock` on `<stateDir>/lock` for as long
as it runs (the kernel releases it when the process ends, however it ends, so a crash
leaves no stale lock), and the file names its pid for the one who is refused.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

LOCK_FILE_NAME = "lock"


class StateDirInUse(Exception):
    """Another process holds the state directory."""

    def __init__(self, path: Path, holder: str) -> None:
        super().__init__(
            f"state directory {path.parent} is in use by another process ({holder}); "
            f"lock file {path}"
        )
        self.path = path
        self.holder = holder


class StateLock:
    """The exclusive lock on a state directory, held until `release` or the process ends."""

    def __init__(self, state_dir: Path) -> None:
        self.path = Path(state_dir) / LOCK_FILE_NAME
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise StateDirInUse(self.path, holder) from None
        except BaseException:
            os.close(fd)
            raise
        os.fchmod(fd, 0o600)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd: int | None = fd

    def release(self) -> None:
        """Let another process take the directory (safe to call twice)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)  # closing the only descriptor drops the flock


def _holder(fd: int) -> str:
    """Who holds the lock, as its file says (written right after it was taken)."""
    try:
        text = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
    except OSError:
        text = ""
    return f"pid {text}" if text.isdigit() else "pid unknown"
