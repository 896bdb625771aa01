"""The plugin's pure parts: report parsing, planning, credential injection."""

from __future__ import annotations

import base64
import copy
import json
from datetime import UTC, datetime

import pytest
from sedna_dataset.downstream import (
    edge_relevant_change,
    outgoing,
    plan_delete,
    plan_upsert,
)
from sedna_dataset.status import ReportError, status_from_report

from sedna.runtime import CREDENTIAL_ANNOTATION, attach_credential

NOW = datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)


def ds(node: str, rv: str = "1", **spec: str) -> dict[str, object]:
    return {
        "metadata": {"name": "d", "namespace": "ns", "resourceVersion": rv},
        "spec": {"url": "/data/x.txt", "format": "txt", "nodeName": node, **spec},
    }


def test_report_becomes_status() -> None:
    assert status_from_report({"numberOfSamples": 0}, NOW) == {
        "numberOfSamples": 0,
        "updateTime": "2024-01-02T03:04:05Z",
    }
    # Go's RFC3339Nano and a null time (Go's omitempty pointer) are both fine
    nano = "2024-05-01T00:00:01.123456789z"
    got = status_from_report({"numberOfSamples": 5, "updateTime": nano}, NOW)
    assert got["updateTime"] == "2024-05-01T00:00:01Z"
    got = status_from_report({"numberOfSamples": 5, "updateTime": None, "extra": 1}, NOW)
    assert got == {"numberOfSamples": 5, "updateTime": "2024-01-02T03:04:05Z"}


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ([], "content"),
        ({"numberOfSamples": 2**63}, "numberOfSamples"),
        ({"numberOfSamples": None}, "numberOfSamples"),
        ({"numberOfSamples": 1, "updateTime": "2024-05-01"}, "updateTime"),
        ({"numberOfSamples": 1, "updateTime": "2024-05-01T00:00:00"}, "updateTime"),
    ],
)
def test_bad_reports_name_the_field(content: object, field: str) -> None:
    with pytest.raises(ReportError) as err:
        status_from_report(content, NOW)
    assert err.value.field == field


def test_plans() -> None:
    assert [(m.node, m.operation) for m in plan_upsert(None, ds("a"))] == [("a", "insert")]
    moved = plan_upsert(ds("a"), ds("b", "2"))
    assert [(m.node, m.operation) for m in moved] == [("a", "delete"), ("b", "insert")]
    assert [m.obj["spec"]["nodeName"] for m in moved] == ["a", "b"]
    assert [(m.node, m.operation) for m in plan_upsert(ds("a"), ds("", "2"))] == [("a", "delete")]
    assert plan_upsert(None, ds("")) == []
    assert [(m.node, m.operation) for m in plan_delete(ds("a"))] == [("a", "delete")]
    assert plan_delete(ds("")) == []
    assert all(m.obj["kind"] == "Dataset" for m in moved)


def test_status_only_writes_are_not_edge_relevant() -> None:
    old = ds("a")
    status_only = {**copy.deepcopy(old), "status": {"numberOfSamples": 3}}
    status_only["metadata"]["resourceVersion"] = "2"  # type: ignore[index]
    assert not edge_relevant_change(old, status_only)
    assert edge_relevant_change(old, old)  # a resync re-sends
    assert edge_relevant_change(old, ds("a", "2", url="/other"))


def test_credential_injection_changes_neither_object_nor_secret() -> None:
    cached = ds("a")
    cached["metadata"]["annotations"] = {"keep": "me"}  # type: ignore[index]
    secret = {
        "metadata": {"name": "s"},  # no annotations: Sedna's injector panics on this
        "data": {"K": base64.b64encode(b"v").decode(), "BAD": "!!"},
    }
    before = copy.deepcopy((cached, secret))
    out = outgoing(cached)
    attach_credential(out, secret)
    assert (cached, secret) == before
    annotations = out["metadata"]["annotations"]
    assert annotations["keep"] == "me"
    assert json.loads(annotations[CREDENTIAL_ANNOTATION]) == {"K": "v"}
