"""A watch event that only echoes a controller's own write wakes no second sync; every
other event (another version, a resync, a move to another owner) still does."""

from __future__ import annotations

from typing import Any

import kubernetes
import pytest

from sedna.runtime import KubeClient, SharedInformerFactory
from sedna.runtime.kube.echoes import WriteEchoes
from sedna.runtime.kube.resources import JOINT_INFERENCE_SERVICES
from sedna.runtime.workloads.owned import _OwnedHandler


def _obj(uid: str, rv: str, owner_uid: str = "owner-uid", name: str = "d") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": uid,
            "resourceVersion": rv,
            "ownerReferences": [
                {
                    "apiVersion": "sedna.io/v1alpha1",
                    "kind": "JointInferenceService",
                    "name": "ji",
                    "uid": owner_uid,
                    "controller": True,
                }
            ],
        }
    }


def test_an_echo_is_the_version_written_and_counts_once() -> None:
    echoes = WriteEchoes()
    echoes.record(_obj("a", "5"))
    assert not echoes.is_echo(_obj("a", "6"))  # a later change, by anyone
    assert echoes.is_echo(_obj("a", "5"))
    assert not echoes.is_echo(_obj("a", "5"))  # each write echoes once
    echoes.record(_obj("b", "7"))
    echoes.forget(_obj("b", "9"))  # gone: whatever version
    assert not echoes.is_echo(_obj("b", "7"))


@pytest.mark.parametrize(
    "bad",
    [
        None,
        {},
        {"metadata": None},
        {"metadata": {"uid": "a"}},
        {"metadata": {"uid": 1, "resourceVersion": "1"}},
        {"metadata": {"uid": "a", "resourceVersion": 5}},
        "text",
    ],
)
def test_a_malformed_object_is_never_an_echo_nor_remembered(bad: Any) -> None:
    echoes = WriteEchoes()
    echoes.record(bad)
    assert len(echoes) == 0
    assert not echoes.is_echo(bad)
    echoes.forget(bad)


def test_bounded_the_oldest_forgotten_first() -> None:
    echoes = WriteEchoes(max_entries=3)
    for i in range(5):
        echoes.record(_obj(f"u{i}", "1"))
    assert len(echoes) == 3
    assert not echoes.is_echo(_obj("u0", "1")) and not echoes.is_echo(_obj("u1", "1"))
    assert echoes.is_echo(_obj("u4", "1"))
    with pytest.raises(ValueError):
        WriteEchoes(max_entries=0)


def test_the_owned_handler_wakes_the_owner_for_everything_but_an_echo(
    api_client: kubernetes.client.ApiClient,
) -> None:
    factory = SharedInformerFactory(KubeClient(api_client), namespace="ns")
    owners = factory.informer(JOINT_INFERENCE_SERVICES)  # not started: filled by hand
    owners.indexer.put("ns/ji", {"metadata": {"name": "ji", "namespace": "ns", "uid": "owner-uid"}})
    woken: list[str] = []
    echoes = WriteEchoes()
    handler = _OwnedHandler(owners, "JointInferenceService", "sedna.io", woken.append, echoes)

    made = _obj("d1", "10")
    echoes.record(made)
    handler.on_add(made)
    assert woken == []  # the create's own echo
    handler.on_add(_obj("d2", "11"))  # made by someone else, or before a restart
    assert woken == ["ns/ji"]

    rolled = _obj("d1", "12")
    echoes.record(rolled)
    handler.on_update(made, rolled)
    assert woken == ["ns/ji"]
    handler.on_update(rolled, _obj("d1", "13"))  # the Deployment controller's status
    assert woken == ["ns/ji", "ns/ji"]
    handler.on_update(_obj("d1", "13"), _obj("d1", "13"))  # a resync: the owner's covers it
    assert woken == ["ns/ji", "ns/ji"]

    moved = _obj("d1", "14", owner_uid="other")
    echoes.record(moved)
    handler.on_update(_obj("d1", "13"), moved)  # a move away from the owner still wakes it
    assert woken == ["ns/ji"] * 3


def test_a_status_write_is_an_echo_only_when_it_changed_nothing_but_status() -> None:
    read = {**_obj("j", "1"), "spec": {"a": 1}, "status": {}}
    echoes = WriteEchoes()
    echoes.record_status_write(read, read)  # nothing written (same version)
    assert len(echoes) == 0
    mine = {**_obj("j", "2"), "spec": {"a": 1}, "status": {"active": 1}}
    echoes.record_status_write(mine, read)
    assert echoes.is_echo(mine)
    # after a conflict the write went onto a version with someone's spec or label change,
    # which the sync never saw: its event must wake the next sync
    respec = {**_obj("j", "3"), "spec": {"a": 2}, "status": {"active": 1}}
    echoes.record_status_write(respec, read)
    relabel = _obj("j", "4")
    relabel["metadata"]["labels"] = {"x": "y"}
    echoes.record_status_write({**relabel, "spec": {"a": 1}}, read)
    assert len(echoes) == 0
