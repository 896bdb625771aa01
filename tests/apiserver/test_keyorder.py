"""Server-internal: a paginated list read through the key order and the events since
its snapshot equals the resource as it was, whatever was written in between.

Random writes (creates, updates, deletes, re-creates, across namespaces) after a
snapshot's version; every page walk of that snapshot, at any limit and in any scope,
must give exactly the objects of that version in etcd's key order, and
``remainingItemCount`` must count them. Skipped against a real cluster (no HTTP here:
the HTTP path is covered in test_pagination*.py).
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sedna.embedded.apiserver import pagination
from sedna.embedded.apiserver.store import Store
from sedna.embedded.apiserver.watch import WatchHub

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("SEDNA_TEST_KUBECONFIG")),
    reason="server-internal test: not applicable to a real cluster",
)
KEY = ("", "configmaps")
NAMESPACES = ("a", "a-b", "b")  # etcd's byte order: "a-b/..." before "a/..." ('-' < '/')
NAMES = tuple(f"c{i}" for i in range(8))

write = st.tuples(st.sampled_from(NAMESPACES), st.sampled_from(NAMES), st.booleans())


def _obj(ns: str, name: str, gen: int) -> dict[str, Any]:
    return {"metadata": {"namespace": ns, "name": name}, "data": {"gen": str(gen)}}


def _apply(store: Store, ns: str, name: str, keep: bool, gen: int) -> None:
    """``keep``: create or update; else delete (when present)."""
    old = store.get(KEY, ns, name)
    if keep:
        store.put(KEY, _obj(ns, name, gen), old)
    elif old is not None:
        store.remove(KEY, old)


def _walk(store: Store, rv: int, scope: str | None, limit: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    start = ""
    while True:
        snap = store.snapshot(KEY, rv)
        assert snap is not None
        pg = pagination.page(snap, scope, None, limit, start)
        items.extend(pg.items)
        if pg.next_start is None:
            assert pg.remaining is None
            return items
        expected_total = len(_state(store, rv, scope))
        assert pg.remaining == expected_total - len(items)
        start = pg.next_start


_HISTORY: dict[int, dict[tuple[str, str], dict[str, Any]]] = {}


def _state(store: Store, rv: int, scope: str | None) -> list[dict[str, Any]]:
    objs = _HISTORY[rv]
    keys = sorted((f"{ns}/{name}", (ns, name)) for ns, name in objs if scope is None or ns == scope)
    return [objs[oid] for _, oid in keys]


@settings(max_examples=60, deadline=None)
@given(
    before=st.lists(write, max_size=25),
    after=st.lists(write, max_size=25),
    limit=st.integers(min_value=1, max_value=5),
    scope=st.sampled_from((None, *NAMESPACES)),
)
def test_pages_of_a_snapshot_are_the_objects_of_its_version(
    before: list[tuple[str, str, bool]],
    after: list[tuple[str, str, bool]],
    limit: int,
    scope: str | None,
) -> None:
    store = Store(WatchHub(history=1000))
    _HISTORY.clear()
    gen = 0
    for ns, name, keep in before:
        gen += 1
        _apply(store, ns, name, keep, gen)
    rv = store.rv
    _HISTORY[rv] = {(ns, n): o for (ns, n), o in store.objects.get(KEY, {}).items()}
    want = _state(store, rv, scope)
    for ns, name, keep in after:
        gen += 1
        _apply(store, ns, name, keep, gen)
    got = _walk(store, rv, scope, limit)
    assert [(o["metadata"]["namespace"], o["metadata"]["name"], o["data"]) for o in got] == [
        (o["metadata"]["namespace"], o["metadata"]["name"], o["data"]) for o in want
    ]
    # and the live list is in the same order as a fresh snapshot's pages
    now = store.list(KEY, scope)
    assert [id(o) for o in _walk_live(store, scope, limit)] == [id(o) for o in now]


def _walk_live(store: Store, scope: str | None, limit: int) -> list[dict[str, Any]]:
    rv = store.rv
    _HISTORY[rv] = {(ns, n): o for (ns, n), o in store.objects.get(KEY, {}).items()}
    return _walk(store, rv, scope, limit)
