"""`inject_by_key` in one pass keeps the result of the entry-by-entry merge it replaced."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from sedna.runtime.workers.env import inject_by_key

_names = st.one_of(
    st.sampled_from(["A", "B", "C"]),
    st.none(),
    st.lists(st.integers(0, 2), max_size=2),  # a malformed name: unhashable
    st.integers(0, 2),
)
_items = st.lists(st.fixed_dictionaries({"name": _names, "value": st.integers()}), max_size=6)


def _entry_by_entry(target: list[dict[str, Any]], entries: list[dict[str, Any]]) -> None:
    for entry in entries:
        target[:] = [t for t in target if t.get("name") != entry.get("name")]
        target.append(dict(entry))


@given(_items, _items)
def test_the_same_as_merging_entry_by_entry(
    target: list[dict[str, Any]], entries: list[dict[str, Any]]
) -> None:
    want = [dict(t) for t in target]
    _entry_by_entry(want, entries)
    got = [dict(t) for t in target]
    inject_by_key(got, iter(entries), "name")
    assert got == want


def test_an_entry_replaces_the_template_s_item_and_an_earlier_entry() -> None:
    target = [{"name": "A", "value": "t"}, {"name": "K", "value": "kept"}]
    inject_by_key(
        target, [{"name": "A", "value": "1"}, {"name": "B"}, {"name": "A", "value": "2"}], "name"
    )
    assert target == [{"name": "K", "value": "kept"}, {"name": "B"}, {"name": "A", "value": "2"}]
