"""Status writes from a cached object: the first PUT needs no GET, a 409 re-reads.

Requests are counted on the in-process server with count-only fault rules (a rule
that would fail every 10**9-th match counts every match and fails none).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from types import MappingProxyType
from typing import Any

import kubernetes
import pytest

from sedna.embedded.apiserver import APIServer
from sedna.embedded.apiserver.faults import FailureRule
from sedna.runtime.kube import (
    MODELS,
    Conflict,
    KubeClient,
    ResourceClient,
    update_status_with_retry,
    update_with_retry,
)
from sedna.runtime.kube.jsoncopy import json_deepcopy as _private_copy


@pytest.fixture()
def srv(embedded_apiserver: APIServer) -> Iterator[APIServer]:
    yield embedded_apiserver
    embedded_apiserver.faults.reset()


@pytest.fixture()
def models(api_client: kubernetes.client.ApiClient) -> ResourceClient:
    return KubeClient(api_client).resource(MODELS)


def _model(models: ResourceClient, namespace: str, name: str = "m") -> dict[str, Any]:
    return models.create(
        namespace, {"metadata": {"name": name}, "spec": {"url": "s3://bucket/m", "format": "pb"}}
    )


def _count(srv: APIServer, verb: str, resource: str) -> FailureRule:
    return srv.faults.fail(500, every=10**9, verbs=[verb], resources=[resource])


def _set_metric(value: str) -> Any:
    calls: list[dict[str, Any]] = []

    def mutate(obj: dict[str, Any]) -> bool:
        calls.append(copy.deepcopy(obj))
        obj.setdefault("status", {})["metrics"] = [{"key": "acc", "value": value}]
        return True

    mutate.calls = calls  # type: ignore[attr-defined]
    return mutate


def test_first_attempt_uses_current_without_a_get(
    models: ResourceClient, srv: APIServer, namespace: str
) -> None:
    current = _model(models, namespace)
    pristine = copy.deepcopy(current)
    gets, puts = _count(srv, "get", "models"), _count(srv, "update", "models/status")
    out = update_status_with_retry(models, namespace, "m", _set_metric("0.9"), current=current)
    assert (gets.seen, puts.seen) == (0, 1)
    assert out["status"]["metrics"] == [{"key": "acc", "value": "0.9"}]
    assert current == pristine  # mutate got a copy: a cached object is never changed
    assert models.get(namespace, "m")["status"]["metrics"][0]["value"] == "0.9"


def test_stale_current_gets_409_then_reads_and_retries(
    models: ResourceClient, srv: APIServer, namespace: str
) -> None:
    stale = _model(models, namespace)
    models.patch(namespace, "m", {"metadata": {"labels": {"moved": "on"}}})  # rv moves on
    gets, puts = _count(srv, "get", "models"), _count(srv, "update", "models/status")
    mutate = _set_metric("0.8")
    out = update_status_with_retry(models, namespace, "m", mutate, current=stale)
    assert (gets.seen, puts.seen) == (1, 2)  # the stale PUT's 409, one GET, one PUT
    first, second = mutate.calls
    assert first["metadata"]["resourceVersion"] == stale["metadata"]["resourceVersion"]
    assert second["metadata"]["labels"] == {"moved": "on"}  # re-applied to the fresh object
    assert out["metadata"]["labels"] == {"moved": "on"}
    assert out["status"]["metrics"][0]["value"] == "0.8"


def test_injected_409_on_the_first_put_falls_back_to_get(
    models: ResourceClient, srv: APIServer, namespace: str
) -> None:
    current = _model(models, namespace)
    conflict = srv.faults.fail(409, verbs=["update"], resources=["models/status"], count=1)
    gets = _count(srv, "get", "models")
    mutate = _set_metric("0.7")
    out = update_status_with_retry(models, namespace, "m", mutate, current=current)
    assert conflict.remaining == 0 and gets.seen == 1 and len(mutate.calls) == 2
    assert out["status"]["metrics"][0]["value"] == "0.7"


def test_conflicts_with_current_still_give_up_after_the_bound(
    models: ResourceClient, srv: APIServer, namespace: str
) -> None:
    current = _model(models, namespace)
    srv.faults.fail(409, verbs=["update"], resources=["models/status"])
    gets = _count(srv, "get", "models")
    with pytest.raises(Conflict):
        update_status_with_retry(models, namespace, "m", _set_metric("x"), 3, current=current)
    assert gets.seen == 2  # attempts 2 and 3 read; the first used `current`


def test_nothing_to_write_on_current_sends_nothing(
    models: ResourceClient, srv: APIServer, namespace: str
) -> None:
    current = _model(models, namespace)
    gets, puts = _count(srv, "get", "models"), _count(srv, "update", "models")
    out = update_status_with_retry(models, namespace, "m", lambda obj: False, current=current)
    assert (gets.seen, puts.seen) == (0, 0)
    assert out == current and out is not current


def test_without_current_the_first_attempt_still_reads(
    models: ResourceClient, srv: APIServer, namespace: str
) -> None:
    _model(models, namespace)
    gets, puts = _count(srv, "get", "models"), _count(srv, "update", "models/status")
    update_status_with_retry(models, namespace, "m", _set_metric("0.5"))
    assert (gets.seen, puts.seen) == (1, 1)


def test_update_with_retry_uses_current_for_the_main_resource(
    models: ResourceClient, srv: APIServer, namespace: str
) -> None:
    current = _model(models, namespace)
    gets = _count(srv, "get", "models")

    def label(obj: dict[str, Any]) -> bool:
        obj["metadata"].setdefault("labels", {})["tier"] = "gold"
        return True

    out = update_with_retry(models, namespace, "m", label, current=current)
    assert gets.seen == 0
    assert out["metadata"]["labels"] == {"tier": "gold"}
    assert "labels" not in current["metadata"]


def test_private_copy_is_deep_and_keeps_what_json_cannot_say() -> None:
    obj: dict[str, Any] = {
        "metadata": {"name": "m", "labels": {"a": "b"}},
        "status": {"n": [1, 2.5, None]},
    }
    out = _private_copy(obj)
    assert out == obj and out["metadata"] is not obj["metadata"]
    out["metadata"]["labels"]["a"] = "changed"
    assert obj["metadata"]["labels"]["a"] == "b"
    # a read-only mapping, an int key: not plain JSON, so deepcopy's exact copy
    proxied = _private_copy(MappingProxyType({"data": {1: "one"}}))
    assert proxied == {"data": {1: "one"}}
