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
import faulthandler, os, signal, sys, threading
import sedna.runtime.stop_request as stop_request

stop_request.POLL_SECONDS = 0.01  # a missed wake-up costs one slice: keep slices short
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
lines = 0


def tracer(frame, event, arg):
    global lines
    if event == "line" and frame.f_code.co_filename in traced:
        lines += 1
        if lines == position:
            os.kill(os.getpid(), signal.SIGUSR2)
    return tracer


def walk(timeout):  # one wait, traced; the signal comes at line `position` of it
    global lines
    ask, wait = make()
    signal.signal(signal.SIGUSR2, lambda *_: ask())
    lines = 0
    sys.settrace(tracer)
    woken = wait(timeout)
    sys.settrace(None)
    return woken


position = 0
walk(0.015)  # no signal: how many lines a wait of more than one slice runs
span = lines
for position in range(1, span + 1):
    assert walk(30), position
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
