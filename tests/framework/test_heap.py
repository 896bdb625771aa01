"""The heap settler: what it freezes is still freed when dropped, and a full round
reclaims the cycles frozen before it."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from sedna.heap import HeapSettler
from sedna.testing import wait_until


class _Node:
    def __init__(self) -> None:
        self.peer: _Node | None = None


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()  # the rest of the test process collects as usual


def test_settle_freezes_the_survivors() -> None:
    gc.unfreeze()
    keep = [{"spec": {"x": [1, 2]}} for _ in range(100)]
    HeapSettler().settle()
    assert gc.get_freeze_count() >= len(keep)


def test_frozen_objects_without_cycles_are_still_freed() -> None:
    obj = _Node()
    ref = weakref.ref(obj)
    HeapSettler().settle()
    del obj  # reference counting frees it: no collection walks the frozen generation
    assert ref() is None


def test_a_cycle_frozen_alive_is_reclaimed_by_the_full_round() -> None:
    a, b = _Node(), _Node()
    a.peer, b.peer = b, a
    ref = weakref.ref(a)
    settler = HeapSettler(full_every=2)
    settler.settle()  # round 1: the live cycle is frozen
    del a, b
    gc.collect()
    assert ref() is not None  # frozen: the collector does not walk it
    settler.settle()  # round 2 (full): unfrozen and collected
    assert ref() is None


def test_start_settles_at_once_and_stop_unfreezes() -> None:
    gc.unfreeze()
    settler = HeapSettler(interval=3600)
    settler.start()
    try:
        assert settler.rounds == 1 and gc.get_freeze_count() > 0
        settler.start()  # a second start is a no-op
        assert settler.rounds == 1
    finally:
        settler.stop()
    assert gc.get_freeze_count() == 0


def test_quiet_after_a_settle_busy_after_allocations() -> None:
    """An idle GM skips the round: nothing was allocated since the last one."""
    threshold = gc.get_threshold()[0]
    assert HeapSettler.quiet((0, 0, 0)) and HeapSettler.quiet((threshold - 1, 0, 0))
    assert not HeapSettler.quiet((threshold, 0, 0))
    assert not HeapSettler.quiet((0, 1, 0)) and not HeapSettler.quiet((0, 0, 1))
    made = [{"i": i} for i in range(gc.get_threshold()[0] * 3)]  # young collections ran
    assert not HeapSettler.quiet()
    assert made


def test_hold_keeps_automatic_collections_off_until_start() -> None:
    assert gc.isenabled()
    settler = HeapSettler(interval=3600)
    settler.hold()
    try:
        assert not gc.isenabled()
        settler.start()  # collects once, then the collector is back on
        assert gc.isenabled() and settler.rounds == 1
    finally:
        settler.stop()
    assert gc.isenabled()


def test_a_held_settler_that_never_started_turns_the_collector_back_on_at_stop() -> None:
    settler = HeapSettler()
    settler.hold()
    assert not gc.isenabled()
    settler.stop()
    assert gc.isenabled()


def test_hold_leaves_a_collector_that_someone_else_turned_off_as_it_was() -> None:
    gc.disable()
    try:
        settler = HeapSettler(interval=3600)
        settler.hold()
        settler.start()
        assert not gc.isenabled()
        settler.stop()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_start_that_settles_later_keeps_the_hold_until_its_first_round() -> None:
    settler = HeapSettler(interval=0.05)
    settler.hold()
    try:
        settler.start(settle_now=False)
        assert settler.rounds == 0  # nothing walked the heap as the GM turned ready
        wait_until(lambda: settler.rounds >= 1, what="the first round")
        wait_until(gc.isenabled, what="the collector back on after the first round")
    finally:
        settler.stop()
    assert gc.isenabled()


def test_after_first_runs_once_after_the_first_round() -> None:
    calls: list[int] = []
    settler = HeapSettler(interval=0.05)
    try:
        settler.start(settle_now=False, after_first=lambda: calls.append(settler.rounds))
        assert calls == []
        junk: list[list[list[int]]] = []

        def busy() -> bool:  # allocations, so that no round is skipped as quiet
            junk.append([[i] for i in range(2 * gc.get_threshold()[0])])
            return settler.rounds >= 3

        wait_until(busy, what="three rounds")
        assert calls == [1]
    finally:
        settler.stop()
