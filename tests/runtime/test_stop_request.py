"""A stop asked for from a signal handler never deadlocks the thread it interrupts.

The probe runs in a subprocess: it waits on a stop object and, through a trace
function, sends itself a signal at each line of the wait in turn (the handler sets the
stop), so the handler runs at every point of the wait, including inside
`threading.Event`'s internal lock. A deadlock ends the subprocess through faulthandler's
deadline with the stack.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from sedna.runtime.stop_request import StopRequest

PROBE = """
import faulthandler, os, signal, sys, threading, time
import sedna.runtime.stop_request as stop_request

faulthandler.dump_traceback_later(float(sys.argv[2]), exit=True)
from sedna.manager import Manager
from sedna.runtime.config import GMConfig
from sedna.runtime.host import FeatureHost

def make():  # what the handler asks, and what the thread waits on
    kind = sys.argv[1]
    if kind in ("event", "stop"):
        event = threading.Event() if kind == "event" else stop_request.StopRequest()
        return event.set, event.wait
    if kind == "manager":
        owner = Manager(GMConfig(), use_entry_points=False)
    else:
        owner = FeatureHost(GMConfig())
    return (lambda: owner.request_stop("signal")), owner._stopped.wait

traced = (threading.__file__, stop_request.__file__)
lines = []  # the time of each line the wait ran
sent = [0.0]


def tracer(frame, event, arg):
    if event == "line" and frame.f_code.co_filename in traced:
        lines.append(time.monotonic())
        if len(lines) == position:
            sent[0] = time.monotonic()
            os.kill(os.getpid(), signal.SIGUSR2)
    return tracer


def walk(timeout):  # one wait, traced; the signal comes at line `position` of it
    ask, wait = make()
    signal.signal(signal.SIGUSR2, lambda *_: ask())
    lines.clear()
    sys.settrace(tracer)
    woken = wait(timeout)
    sys.settrace(None)
    return woken


position = 0
walk(0.2)  # no signal: the lines of a wait that ends by its timeout
span = len(lines)
# the line that blocks: the next one ran when the timeout was up
first_block = next(i + 1 for i in range(span - 1) if lines[i + 1] - lines[i] >= 0.15)
for position in range(1, span + 1):
    if position <= first_block:  # before the wait blocks: the signal must end it at once
        assert walk(30), position
        assert time.monotonic() - sent[0] < 10, ("a wake-up missed", position)
    else:  # after a block that ended by time: the stop is still seen
        assert walk(0.015), position
print("positions", span)
"""


def probe(kind: str, deadline: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROBE, kind, str(deadline)],
        capture_output=True,
        text=True,
        timeout=deadline + 30,
        cwd=Path(__file__).resolve().parents[2],
    )


def test_a_signal_handler_sets_the_stop_at_every_point_of_the_wait() -> None:
    proc = probe("stop", deadline=60)
    assert proc.returncode == 0, proc.stderr
    positions = int(proc.stdout.split()[-1])
    assert positions >= 10, proc.stdout  # the whole wait was walked, not one line


def test_the_probe_catches_the_deadlock_of_a_plain_event() -> None:
    """The hazard is real: `threading.Event.set` from the handler waits on its own lock."""
    proc = probe("event", deadline=3)
    assert proc.returncode != 0, proc.stdout
    assert "Timeout" in proc.stderr and "in set" in proc.stderr, proc.stderr


def test_set_from_another_thread_wakes_a_waiter_at_once() -> None:
    stop = StopRequest()
    waiting = threading.Event()
    result: list[bool] = []

    def waiter() -> None:
        waiting.set()
        result.append(stop.wait())

    thread = threading.Thread(target=waiter)
    thread.start()
    assert waiting.wait(60)
    stop.set()
    thread.join(60)
    assert result == [True]
    stop.clear()
    assert not stop.is_set()
    assert stop.wait(0) is False
    assert stop.wait(-1) is False


@pytest.mark.parametrize("owner", ["manager", "host"])
def test_request_stop_from_a_signal_handler_ends_the_wait_of_the_manager_and_the_host(
    owner: str,
) -> None:
    """Both document `request_stop` as safe from a signal handler (docs/embedding.md)."""
    proc = probe(owner, deadline=60)
    assert proc.returncode == 0, proc.stderr
