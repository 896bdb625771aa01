"""A stop request that a signal handler may raise: no lock is taken, nothing polls.

A Python signal handler runs in the main thread between two bytecodes, also while that
thread is inside `threading.Event.wait` and holds the event's internal lock (between
`with self._cond:` and the release of `Condition.wait`). A handler that then calls
`Event.set` on that event waits for the lock its own thread holds: the process never
stops (seen as a SIGINT right after start that ran into the stop deadline).

So the request is a flag and a pipe (the self-pipe trick, as asyncio's signal
handling): `set` raises the flag and writes a byte, `wait` blocks in `poll` on the
pipe. Neither takes a lock, and a waiting thread sleeps until the byte arrives instead
of waking a few times a second to look (an idle GM woke 4 times a second for it).

A signal the kernel hands to another thread (it picks the main thread when that one is
asleep with no signal pending, so only a second signal in a row may go elsewhere) runs
its Python handler only once the main thread runs again: a wait still wakes every
`SAFETY_SLICE_SECONDS` for that.
"""

from __future__ import annotations

import contextlib
import os
import select
import time
import weakref
from typing import Protocol

SAFETY_SLICE_SECONDS = 5.0


class StopFlag(Protocol):
    """What waits that a stop may end read: only whether it was asked for."""

    def is_set(self) -> bool: ...


class StopRequest:
    """`threading.Event`'s `set`/`is_set`/`wait`/`clear` for a stop, safe from a signal handler.

    `set` from any thread, or from a signal handler on the main thread, wakes every
    waiter at once. The pipe's two descriptors are closed with the object.
    """

    def __init__(self) -> None:
        self._raised = False
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)
        self._closer = weakref.finalize(self, _close, self._read, self._write)

    def set(self) -> None:
        self._raised = True
        # a full pipe already wakes every waiter; a closed one has none
        with contextlib.suppress(OSError):
            os.write(self._write, b"\0")

    def is_set(self) -> bool:
        return self._raised

    def clear(self) -> None:
        self._raised = False
        with contextlib.suppress(OSError):  # BlockingIOError: drained
            while os.read(self._read, 512):
                pass

    def wait(self, timeout: float | None = None) -> bool:
        """Whether the stop was asked for, waiting at most `timeout` seconds (None: until it is)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        poller = select.poll()
        poller.register(self._read, select.POLLIN)
        while not self._raised:
            left = SAFETY_SLICE_SECONDS
            if deadline is not None:
                left = min(left, deadline - time.monotonic())
                if left <= 0:
                    break
            poller.poll(max(1, int(left * 1000 + 0.999)))  # ms, never 0 (a busy loop)
        return self._raised


def _close(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
