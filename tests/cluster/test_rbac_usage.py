"""The check behind the session's "every granted verb was used" (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

from support.rbac import RBAC_PATH, dump_calls, granted, load_calls, unused_grants

from sedna.embedded.apiserver import ApiCall


def test_a_grant_no_call_used_is_reported(tmp_path: Path) -> None:
    grants = granted(RBAC_PATH)
    assert ("", "pods", "create") in grants and ("", "secrets", "get") in grants
    calls = {ApiCall(verb, group, resource, "ns") for group, resource, verb in grants}
    assert unused_grants(calls) == []
    calls.discard(ApiCall("create", "", "pods", "ns"))
    assert unused_grants(calls) == [("", "pods", "create")]
    # What the test processes leave for the check reads back the same (None included).
    calls.add(ApiCall("list", "", "nodes", None))
    dump_calls(calls, tmp_path, "gw0")
    assert load_calls(tmp_path) == calls
