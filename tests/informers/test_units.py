"""Unit tests of the informer building blocks: keys, selectors, indexer, backoff, detector."""

from __future__ import annotations

import copy
import random
from collections import UserDict
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sedna.runtime.clock import FakeClock
from sedna.runtime.informers import (
    Backoff,
    BackoffPolicy,
    CacheMutationError,
    DeletedFinalStateUnknown,
    FilteringResourceEventHandler,
    Indexer,
    Lister,
    MutationDetector,
    ResourceEventHandlerFuncs,
    SelectorError,
    as_selector,
    controller_owner_uids,
    meta_namespace_key,
    namespace_index,
    parse_selector,
    selector_from_label_selector,
    split_key,
)
from sedna.runtime.informers.store import NAMESPACE_INDEX, OWNER_UID_INDEX
from sedna.runtime.informers.transforms import intern_strings


def obj(ns: str, name: str, labels: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {"metadata": {"namespace": ns, "name": name, "labels": labels or {}, **meta}}


def test_keys() -> None:
    assert meta_namespace_key(obj("ns", "a")) == "ns/a"
    assert meta_namespace_key({"metadata": {"name": "node1"}}) == "node1"
    assert meta_namespace_key(DeletedFinalStateUnknown("ns/x", {})) == "ns/x"
    with pytest.raises(ValueError, match=r"metadata\.name"):
        meta_namespace_key({"metadata": {"namespace": "ns"}})
    with pytest.raises(ValueError):
        meta_namespace_key({"spec": {}})
    # the plain-dict fast path and the general one agree, also on what they refuse
    proxy = MappingProxyType({"metadata": {"name": "n", "namespace": "s"}})
    assert meta_namespace_key(proxy) == "s/n"
    assert meta_namespace_key({"metadata": MappingProxyType({"name": "n"})}) == "n"
    assert meta_namespace_key({"metadata": {"name": "n", "namespace": ""}}) == "n"
    for bad in ({"metadata": {"name": ""}}, {"metadata": {"name": 5}}, {"metadata": None}):
        with pytest.raises(ValueError):
            meta_namespace_key(bad)
    assert split_key("ns/a") == ("ns", "a")
    assert split_key("node1") == ("", "node1")
    for bad in ("", "a/b/c", "/a", "a/"):
        with pytest.raises(ValueError):
            split_key(bad)


@given(
    ns=st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True),
    name=st.from_regex(r"[a-z][a-z0-9.-]{0,20}", fullmatch=True),
)
def test_key_roundtrip(ns: str, name: str) -> None:
    assert split_key(meta_namespace_key(obj(ns, name))) == (ns, name)


LABELS = {"app": "web", "tier": "front", "n": "5", "empty": ""}


@pytest.mark.parametrize(
    ("sel", "expected"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app=db", False),
        ("app!=db", True),
        ("missing!=x", True),
        ("app in (web, db)", True),
        ("app in (db)", False),
        ("app notin (db,cache)", True),
        ("missing notin (db)", True),
        ("tier", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("app=web,tier=front", True),
        ("app=web, tier=back", False),
        ("empty=", True),
        ("n>4", True),
        ("n<4", False),
        ("app>4", False),
    ],
)
def test_selector_strings(sel: str, expected: bool) -> None:
    assert parse_selector(sel).matches(LABELS) is expected


@pytest.mark.parametrize("bad", ["app=web,", "app in web", "app in ()", "=web", "app=(x", "a b"])
def test_bad_selectors_are_named(bad: str) -> None:
    with pytest.raises(SelectorError, match="selector"):
        parse_selector(bad)


def test_selector_forms() -> None:
    sel = as_selector({"app": "web", "tier": "front"})
    assert sel is not None and sel.matches(LABELS)
    assert as_selector({}) is None and as_selector("") is None and as_selector(None) is None
    ls = selector_from_label_selector(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["front", "back"]},
                {"key": "gone", "operator": "DoesNotExist"},
            ],
        }
    )
    assert ls.matches(LABELS)
    assert not ls.matches({"app": "web", "tier": "front", "gone": "1"})
    assert selector_from_label_selector(None).matches({})
    with pytest.raises(SelectorError):
        selector_from_label_selector({"matchExpressions": [{"key": "a", "operator": "Nope"}]})
    assert str(parse_selector("b in (y,x),a")) == "b in (x,y),a"


def owned(ns: str, name: str, uid: str, controller: bool = True) -> dict[str, Any]:
    o = obj(ns, name)
    o["metadata"]["ownerReferences"] = [
        {"uid": uid, "controller": controller, "kind": "Job", "name": "j", "apiVersion": "v1"}
    ]
    return o


def _fresh(text: str) -> str:
    """An equal string that is a distinct object (as JSON decoding makes them)."""
    return "".join(list(text))


class _Dict(dict[str, Any]):
    pass


def test_intern_strings_shares_short_values_at_any_depth() -> None:
    long = "x" * 65
    node: dict[str, Any] = {
        "a": _fresh("bench"),
        "nested": {"list": [_fresh("bench"), {"deep": _fresh("bench")}, 5, None, True]},
        "sub": _Dict(v=_fresh("bench")),  # subclasses are walked too
        "long": _fresh(long),
    }
    intern_strings(node)
    shared = "bench"
    assert node["a"] is shared
    assert node["nested"]["list"][0] is shared
    assert node["nested"]["list"][1]["deep"] is shared
    assert node["sub"]["v"] is shared
    assert node["nested"]["list"][2:] == [5, None, True]
    assert node["long"] is not long and node["long"] == long  # longer ones are left alone


def test_indexes_of_objects_that_are_not_plain_dicts() -> None:
    """The index functions take exact dicts first; other mappings index the same."""
    ref = UserDict({"uid": "u1", "controller": True})
    meta = MappingProxyType({"namespace": "a", "ownerReferences": [ref]})
    o = MappingProxyType({"metadata": meta})
    assert list(namespace_index(o)) == ["a"]
    assert list(controller_owner_uids(o)) == ["u1"]
    assert list(namespace_index({"metadata": None})) == [""]
    assert list(controller_owner_uids({"metadata": {"ownerReferences": "bad"}})) == []


def test_indexer_and_lister() -> None:
    idx = Indexer({NAMESPACE_INDEX: namespace_index, OWNER_UID_INDEX: controller_owner_uids})
    lister = Lister(idx)
    idx.put("a/p1", owned("a", "p1", "u1"))
    idx.put("a/p2", owned("a", "p2", "u1", controller=False))
    idx.put("b/p3", obj("b", "p3", {"app": "x"}))
    assert [o["metadata"]["name"] for o in lister.by_owner_uid("u1")] == ["p1"]
    assert len(lister.list()) == 3
    assert len(lister.list("a")) == 2
    assert [o["metadata"]["name"] for o in lister.list(None, "app=x")] == ["p3"]
    assert lister.list("a", {"app": "x"}) == []
    assert lister.get("b", "p3") is idx.get("b/p3")
    assert lister.get_by_key("b/p3") is idx.get("b/p3")
    # moving an object between index values
    idx.put("a/p1", owned("a", "p1", "u2"))
    assert lister.by_owner_uid("u1") == []
    assert len(lister.by_owner_uid("u2")) == 1
    idx.delete("a/p1")
    assert lister.by_owner_uid("u2") == []
    assert idx.delete("a/nope") is None
    # a custom indexer is built over what is already there
    idx.add_indexer("by-app", lambda o: [o["metadata"].get("labels", {}).get("app", "")])
    assert [o["metadata"]["name"] for o in lister.by_index("by-app", "x")] == ["p3"]
    with pytest.raises(ValueError):
        idx.add_indexer("by-app", lambda o: [])
    with pytest.raises(KeyError):
        lister.by_index("nope", "x")
    cluster = Lister(Indexer(), namespaced=False)
    assert cluster.get("ignored", "n1") is None


def test_handler_funcs_and_filter() -> None:
    seen: list[str] = []
    funcs = ResourceEventHandlerFuncs(add=lambda o: seen.append("add " + o["metadata"]["name"]))
    funcs.on_update({}, {})  # missing callables are no-ops
    funcs.on_delete({})
    filt = FilteringResourceEventHandler(
        lambda o: o["metadata"].get("labels", {}).get("keep") == "1",
        ResourceEventHandlerFuncs(
            add=lambda o: seen.append("add " + o["metadata"]["name"]),
            update=lambda a, b: seen.append("update " + b["metadata"]["name"]),
            delete=lambda o: seen.append("delete"),
        ),
    )
    kept, dropped = obj("a", "k", {"keep": "1"}), obj("a", "k", {})
    filt.on_add(dropped)
    filt.on_update(dropped, kept)
    filt.on_update(kept, kept)
    filt.on_update(kept, dropped)
    filt.on_delete(DeletedFinalStateUnknown("a/k", kept))
    assert seen == ["add k", "update k", "delete", "delete"]


def test_backoff_doubles_caps_and_resets() -> None:
    clock = FakeClock()
    b = Backoff(clock, BackoffPolicy(initial=0.8, maximum=30.0, jitter=0.0, reset_after=120.0))
    delays = [b.next_delay() for _ in range(8)]
    assert delays == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    clock.step(119.0)
    assert b.next_delay() == 30.0
    clock.step(120.0)
    assert b.next_delay() == 0.8


def test_backoff_jitter_stays_in_bounds() -> None:
    b = Backoff(FakeClock(), BackoffPolicy(jitter=0.5), rng=random.Random(1))
    d = b.next_delay()
    assert 0.8 <= d <= 1.2


def test_mutation_detector_names_the_field() -> None:
    det = MutationDetector("pods")
    o = obj("a", "p", {"x": "1"})
    det.track("a/p", o)
    assert det.check() == []
    o["metadata"]["labels"]["x"] = "2"
    found = det.check()
    assert len(found) == 1
    assert "a/p" in found[0] and "metadata.labels.x" in found[0] and "deepcopy" in found[0]
    assert det.check() == []  # reported once
    with pytest.raises(CacheMutationError, match="a/p"):
        det.raise_if_failed()


def test_mutation_detector_ignores_copies() -> None:
    det = MutationDetector("pods")
    o = obj("a", "p", {"x": "1"})
    det.track("a/p", o)
    mine = copy.deepcopy(o)
    mine["metadata"]["labels"]["x"] = "2"
    assert det.check() == []
    det.raise_if_failed()
