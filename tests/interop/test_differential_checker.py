"""The differential test's own machinery: what it calls the same, what it calls a
difference, and the page it reads. No binary needed."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from .differential import Snapshot, differences, documented, undocumented

pytestmark = pytest.mark.sedna_bin


def pod(name: str, uid: str, when: str, worker: str, env: str = "1") -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "generateName": "job-train-",
            "uid": f"{uid}-0000-4000-8000-000000000000",
            "resourceVersion": uid[:3],
            "creationTimestamp": when,
            "labels": {"ilj.sedna.io/uid": f"{uid}-0000-4000-8000-000000000000"},
            "ownerReferences": [{"kind": "IncrementalLearningJob", "controller": True}],
        },
        "spec": {
            "nodeName": "edge-node",
            "containers": [
                {
                    "name": "train",
                    "env": [
                        {"name": "WORKER_NAME", "value": f"train-worker-{worker}"},
                        {"name": "EPOCHS", "value": env},
                    ],
                }
            ],
        },
        "status": {"phase": "Pending", "startTime": when},
    }


def snapshot(p: dict[str, Any], status: dict[str, Any], msg: dict[str, Any]) -> Snapshot:
    return Snapshot(
        owned={"pods": [p], "deployments": [], "services": [], "hpas": []},
        statuses={"IncrementalLearningJob/job": status},
        messages={"edge-node insert incrementallearningjob/job": [msg]},
    )


def test_what_differs_between_two_runs_of_one_gm_is_no_difference() -> None:
    a = snapshot(
        pod("job-train-bcdfg", "aaaaaaaa", "2026-01-01T00:00:00Z", "x2x4z"),
        {"conditions": [{"type": "Waiting", "lastHeartbeatTime": "2026-01-01T00:00:00Z"}]},
        {"kind": "X", "metadata": {"resourceVersion": "5"}, "spec": {"a": 1}},
    )
    b = snapshot(
        pod("job-train-hjklm", "bbbbbbbb", "2027-02-02T10:00:00+02:00", "wq7rt"),
        {"conditions": [{"type": "Waiting", "lastHeartbeatTime": "2027-02-02T01:00:00Z"}]},
        {"kind": "X", "metadata": {"resourceVersion": "99"}, "spec": {"a": 1}, "x": {}},
    )
    assert differences(a, b) == []


def test_a_changed_field_is_a_difference_with_its_id() -> None:
    msg: dict[str, Any] = {"kind": "X", "spec": {"a": 1}}
    status = {"active": 1}
    a = snapshot(pod("job-train-bcdfg", "aaaaaaaa", "2026-01-01T00:00:00Z", "x2x4z"), status, msg)
    changed = pod("job-train-hjklm", "bbbbbbbb", "2026-01-01T00:00:00Z", "wq7rt", env="2")
    other_msg = copy.deepcopy(msg)
    other_msg["spec"]["a"] = 2
    b = snapshot(changed, {"active": 0}, other_msg)
    ids = sorted(d.id for d in differences(a, b))
    assert ids == [
        "lc/incrementallearningjob/insert/spec.a",
        "pods/IncrementalLearningJob/spec.containers.env.value",
        "status/IncrementalLearningJob/active",
    ]


def test_hostile_snapshots_are_compared_not_crashed_on() -> None:
    """Odd shapes (a list where a map was, a pod of the other side only, a message
    the other GM never sent) are differences, never an exception."""
    a = snapshot(pod("p-bcdfg", "aaaaaaaa", "x", "x2x4z"), {"conditions": "text"}, {"spec": []})
    b = Snapshot(
        owned={"pods": [], "deployments": [], "services": [], "hpas": []},
        statuses={"IncrementalLearningJob/job": {"conditions": [{"type": 1}]}},
        messages={"edge-node update incrementallearningjob/job": [{"spec": None}]},
    )
    ids = sorted(d.id for d in differences(a, b))
    assert ids == [
        "lc/incrementallearningjob/insert/only-ours",
        "lc/incrementallearningjob/update/only-go",
        "pods/IncrementalLearningJob/only-ours",
        "status/IncrementalLearningJob/conditions",
    ]


def test_undocumented_differences_are_caught_and_globs_match() -> None:
    a = snapshot(pod("p-bcdfg", "aaaaaaaa", "x", "x2x4z"), {"active": 1}, {"spec": 1})
    b = snapshot(pod("p-hjklm", "bbbbbbbb", "x", "wq7rt", env="9"), {"active": 2}, {"spec": 1})
    found = differences(a, b)
    assert [d.id for d in undocumented(found, {"status/*/active": "why"})] == [
        "pods/IncrementalLearningJob/spec.containers.env.value"
    ]
    assert undocumented(found, {"*": "anything"}) == []


def test_the_page_lists_each_difference_once_with_a_reason() -> None:
    listed = documented()
    assert listed, "no differences read from the page"
    for pattern, reason in listed.items():
        assert len(reason) > 20, f"{pattern}: give the reason"
        area = pattern.split("/", 1)[0]
        assert area in ("pods", "deployments", "services", "hpas", "status", "lc", "*"), pattern
    # the page does not hide everything behind one glob
    assert not any(p in ("*", "*/*", "*/*/*") for p in listed)
    # the known differences are there
    assert "status/ReidJob/conditions*" in listed
    assert "status/VideoAnalyticsJob/conditions*" in listed
    assert "lc/federatedlearningjob/insert/resent" in listed
