"""Status from a handler's return: merge-patch semantics and what is refused, no server."""

from __future__ import annotations

from typing import Any

from sedna.runtime.declarative.merge import check_patch, merge_patch


def test_a_patch_merges_nested_fields_removes_none_and_replaces_lists() -> None:
    status: dict[str, Any] = {"phase": "A", "nested": {"x": 1, "y": 2}, "list": [1, 2]}
    merged = merge_patch(status, {"nested": {"y": None, "z": 3}, "list": [3], "phase": None})
    assert merged == {"nested": {"x": 1, "z": 3}, "list": [3]}
    assert status == {"phase": "A", "nested": {"x": 1, "y": 2}, "list": [1, 2]}  # untouched


def test_a_patch_onto_no_status_starts_from_nothing() -> None:
    assert merge_patch(None, {"a": {"b": 1}}) == {"a": {"b": 1}}


def test_what_cannot_be_a_status_is_named() -> None:
    assert check_patch(None) is None
    assert check_patch({"ok": [1, "2", {"x": None}]}) is None
    assert check_patch(["a"]) == "returned list, not a mapping of status fields or None"
    assert check_patch({1: "x"}) == "returned a status with a key that is not a string: 1"
    problem = check_patch({"when": object()})
    assert problem is not None and problem.startswith("returned a status that is not JSON")
