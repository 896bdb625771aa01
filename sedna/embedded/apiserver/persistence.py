"""SQLite write-through persistence, so a restarted server (new process) keeps its
objects, CRDs and a resourceVersion that keeps increasing.

The file holds every object, Secrets included, so it and its WAL and shared-memory
files are created readable by their owner only (0600), whatever the umask.

Write-through per write in WAL mode with synchronous=NORMAL: a crash may lose the last
transactions, never corrupt the file — the same promise an etcd-less test cluster needs.

A write that fails (a full disk: ``database or disk is full``) is rolled back whole and
raises ``sqlite3.Error`` or ``OSError``; the store then changes nothing either
(``store.Store`` writes here before it touches memory). ``fault`` lets tests make the
next writes fail inside the transaction, as a full disk does.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

Key = tuple[str, str]
# Called inside each write transaction before it commits; raising fails the write.
WriteFault = Callable[[], None]


class SQLitePersister:
    """Objects table keyed by (group, plural, namespace, name) plus the rv counter."""

    def __init__(self, path: str | Path) -> None:
        path = Path(path)
        # SQLite gives the -wal and -shm files the mode of the database file.
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
        os.chmod(path, 0o600)
        self.conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.chmod(f"{path}{suffix}", 0o600)
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS objects (grp TEXT, plural TEXT, ns TEXT, name TEXT, "
            "body BLOB, PRIMARY KEY (grp, plural, ns, name))"
        )
        self.conn.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT)")
        self.fault: WriteFault | None = None

    def save(
        self, key: Key, ns: str, name: str, obj: dict[str, Any], rv: int, raw: bytes | None = None
    ) -> None:
        """Upsert one object (``raw``: its JSON, when already encoded) and the counter."""
        with self.conn:
            self.conn.execute("BEGIN")
            self.conn.execute(
                "INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?, ?)",
                (key[0], key[1], ns, name, raw if raw is not None else orjson.dumps(obj)),
            )
            self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('rv', ?)", (str(rv),))
            self._check_fault()

    def delete(self, key: Key, ns: str, name: str, rv: int) -> None:
        """Remove one object and advance the counter."""
        with self.conn:
            self.conn.execute("BEGIN")
            self.conn.execute(
                "DELETE FROM objects WHERE grp=? AND plural=? AND ns=? AND name=?",
                (key[0], key[1], ns, name),
            )
            self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('rv', ?)", (str(rv),))
            self._check_fault()

    def probe(self, rv: int) -> None:
        """Write the counter as it is: raises while the file cannot take a write.

        Each write appends to the WAL, so this needs the same free space a real write
        needs: it tells when a full disk has room again.
        """
        with self.conn:
            self.conn.execute("BEGIN")
            self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('rv', ?)", (str(rv),))
            self._check_fault()

    def _check_fault(self) -> None:
        if self.fault is not None:
            self.fault()

    def rv(self) -> int:
        """The last committed resourceVersion (0 for a new file)."""
        row = self.conn.execute("SELECT v FROM meta WHERE k='rv'").fetchone()
        return int(row[0]) if row else 0

    def load(self) -> Iterator[tuple[Key, dict[str, Any], int]]:
        """Every stored object, with the size of its JSON."""
        for grp, plural, _ns, _name, body in self.conn.execute(
            "SELECT grp, plural, ns, name, body FROM objects"
        ):
            yield (grp, plural), orjson.loads(body), len(body)

    def close(self) -> None:
        """Checkpoint and close the file."""
        self.conn.close()
