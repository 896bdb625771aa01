"""The two promises controllers build on, checked under random concurrent schedules.

1. No key is ever processed by two workers at once.
2. Every add is followed by a processing that sees it: a worker that reads the
   key's version (as a sync reads the lister) after the last add, for every key.
"""

from __future__ import annotations

import random
import threading
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sedna.runtime.workqueue import Queue

WORKERS = 8
KEYS = [f"ns/k{i}" for i in range(12)]

# One producer's plan: (key index, real pause in 0.1 ms units before adding it).
producer_plan = st.lists(
    st.tuples(st.integers(0, len(KEYS) - 1), st.integers(0, 2)), min_size=1, max_size=40
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    plans=st.lists(producer_plan, min_size=1, max_size=4),
    readd_keys=st.sets(st.integers(0, len(KEYS) - 1), max_size=len(KEYS)),
    seed=st.integers(0, 2**32 - 1),
)
def test_exclusive_processing_and_no_lost_adds(
    plans: list[list[tuple[int, int]]], readd_keys: set[int], seed: int
) -> None:
    q: Queue[str] = Queue()
    lock = threading.Lock()
    version = dict.fromkeys(KEYS, 0)  # bumped by every add, before it
    seen = dict.fromkeys(KEYS, 0)  # highest version a processing observed
    in_progress: set[str] = set()
    violations: list[str] = []
    readds_left = {KEYS[i]: 2 for i in readd_keys}

    def add(key: str) -> None:
        with lock:
            version[key] += 1
        q.add(key)

    def worker(n: int) -> None:
        rng = random.Random(seed + n)
        while True:
            key, shutdown = q.get()
            if shutdown:
                return
            assert key is not None
            with lock:
                if key in in_progress:
                    violations.append(f"{key} processed by two workers at once")
                in_progress.add(key)
                seen[key] = max(seen[key], version[key])
                readd = readds_left.get(key, 0) > 0
                if readd:
                    readds_left[key] -= 1
            if rng.random() < 0.5:
                time.sleep(0.0001)
            if readd:
                add(key)  # the object changed while we were syncing it
            with lock:
                in_progress.discard(key)
            q.done(key)

    def producer(plan: list[tuple[int, int]]) -> None:
        for idx, pause in plan:
            if pause:
                time.sleep(pause * 0.0001)
            add(KEYS[idx])

    workers = [threading.Thread(target=worker, args=(n,)) for n in range(WORKERS)]
    producers = [threading.Thread(target=producer, args=(p,)) for p in plans]
    for t in workers + producers:
        t.start()
    for t in producers:
        t.join()
    assert q.wait_idle(10)
    q.shut_down()
    for t in workers:
        t.join(10)
        assert not t.is_alive()

    assert violations == []
    for key in KEYS:
        assert seen[key] == version[key], f"{key}: last add (v{version[key]}) never processed"
