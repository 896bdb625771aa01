"""`PodCreations`: a create whose answer was lost is found in the API, never repeated.

Against the in-process server with its fault injection: a 504 *after* the write
(kube-apiserver's answer when etcd is slow but the write went through).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sedna.embedded.apiserver import APIServer
from sedna.runtime import (
    MODELS,
    PODS,
    ApiError,
    KubeClient,
    PodCreations,
    generate_labels,
    job_ref,
    read_owned_pods,
)

WORKER = "train"


@pytest.fixture()
def owner(kube: KubeClient, namespace: str) -> dict[str, Any]:
    """A real owner (so the garbage collector keeps its pods): a Model."""
    return kube.resource(MODELS).create(
        namespace,
        {"metadata": {"name": "owner"}, "spec": {"url": "/m", "format": "pb"}},
    )


def _labels(owner: dict[str, Any], worker: str = WORKER) -> dict[str, str]:
    return generate_labels(job_ref(owner), worker)


def _maker(
    kube: KubeClient, namespace: str, owner: dict[str, Any], tag: str = ""
) -> Callable[[], dict[str, Any]]:
    def create() -> dict[str, Any]:
        meta = owner["metadata"]
        return kube.resource(PODS).create(
            namespace,
            {
                "metadata": {
                    "generateName": "owner-train-",
                    "labels": _labels(owner),
                    "annotations": {"tag": tag} if tag else {},
                    "ownerReferences": [
                        {
                            "apiVersion": owner["apiVersion"],
                            "kind": owner["kind"],
                            "name": meta["name"],
                            "uid": meta["uid"],
                            "controller": True,
                        }
                    ],
                },
                "spec": {"containers": [{"name": "w", "image": "x"}]},
            },
        )

    return create


def _create(
    creations: PodCreations, namespace: str, owner: dict[str, Any], make: Any, **kw: Any
) -> Any:
    return creations.create(
        "ns/owner",
        kw.pop("intent", "ready-1"),
        namespace=namespace,
        owner_uid=owner["metadata"]["uid"],
        labels=_labels(owner),
        create=make,
        **kw,
    )


def _pods(kube: KubeClient, namespace: str) -> list[dict[str, Any]]:
    return list(kube.resource(PODS).list(namespace)["items"])


def test_a_lost_answer_is_adopted_on_retry_not_created_again(
    kube: KubeClient, namespace: str, owner: dict[str, Any], embedded_apiserver: APIServer
) -> None:
    creations = PodCreations(kube.resource(PODS))
    make = _maker(kube, namespace, owner)
    embedded_apiserver.faults.fail(
        504, verbs=["create"], resources=["pods"], count=1, after_commit=True
    )
    with pytest.raises(ApiError) as err:
        _create(creations, namespace, owner, make)
    assert err.value.status == 504
    (committed,) = _pods(kube, namespace)  # the write happened
    assert creations.in_doubt("ns/owner", "ready-1")
    again = _create(creations, namespace, owner, make)
    assert again.adopted
    assert again.pod["metadata"]["name"] == committed["metadata"]["name"]
    assert len(_pods(kube, namespace)) == 1
    assert not creations.in_doubt("ns/owner", "ready-1")


def test_a_failure_before_the_write_creates_on_retry(
    kube: KubeClient, namespace: str, owner: dict[str, Any], embedded_apiserver: APIServer
) -> None:
    creations = PodCreations(kube.resource(PODS))
    make = _maker(kube, namespace, owner)
    embedded_apiserver.faults.fail(503, verbs=["create"], resources=["pods"], count=1)
    with pytest.raises(ApiError):
        _create(creations, namespace, owner, make)
    assert creations.in_doubt("ns/owner", "ready-1")  # a 503 cannot tell
    assert _pods(kube, namespace) == []
    made = _create(creations, namespace, owner, make)  # the API shows none: create
    assert not made.adopted
    assert len(_pods(kube, namespace)) == 1


def test_a_rejected_create_is_not_in_doubt(
    kube: KubeClient, namespace: str, owner: dict[str, Any], embedded_apiserver: APIServer
) -> None:
    creations = PodCreations(kube.resource(PODS))
    embedded_apiserver.faults.fail(409, verbs=["create"], resources=["pods"], count=1)
    with pytest.raises(ApiError):
        _create(creations, namespace, owner, _maker(kube, namespace, owner))
    assert not creations.in_doubt("ns/owner", "ready-1")


def test_only_an_adoptable_pod_of_this_owner_and_intent_is_taken(
    kube: KubeClient, namespace: str, owner: dict[str, Any], embedded_apiserver: APIServer
) -> None:
    creations = PodCreations(kube.resource(PODS))
    # a pod of the owner made for another purpose is already there
    _maker(kube, namespace, owner, tag="other")()
    embedded_apiserver.faults.fail(
        504, verbs=["create"], resources=["pods"], count=1, after_commit=True
    )
    make = _maker(kube, namespace, owner, tag="mine")

    def mine(pod: Any) -> bool:
        return bool(pod["metadata"].get("annotations", {}).get("tag") == "mine")

    with pytest.raises(ApiError):
        _create(creations, namespace, owner, make, adoptable=mine)
    # a new intent for the key replaces the doubt: nothing to adopt, a create
    other = _create(creations, namespace, owner, make, intent="ready-2", adoptable=mine)
    assert not other.adopted
    assert len(_pods(kube, namespace)) == 3
    owned = read_owned_pods(
        kube.resource(PODS), namespace, owner["metadata"]["uid"], _labels(owner)
    )
    assert len(owned) == 3
    assert read_owned_pods(kube.resource(PODS), namespace, "another-uid", _labels(owner)) == []


def test_memory_is_bounded(kube: KubeClient, namespace: str) -> None:
    creations = PodCreations(kube.resource(PODS), max_entries=2)
    for key in ("a", "b", "c"):
        creations._remember(key, "i")
    assert not creations.in_doubt("a", "i")
    assert creations.in_doubt("b", "i") and creations.in_doubt("c", "i")
    with pytest.raises(ValueError):
        PodCreations(kube.resource(PODS), max_entries=0)


def test_verify_looks_up_what_another_process_made(
    kube: KubeClient, namespace: str, owner: dict[str, Any]
) -> None:
    """A new process remembers nothing of its predecessor's creates: `verify` makes the
    look-up anyway, and only an adoptable pod stands for the intent."""
    committed = _maker(kube, namespace, owner, tag="mine")()  # the process before
    creations = PodCreations(kube.resource(PODS))
    assert not creations.in_doubt("ns/owner", "ready-1")

    def mine(pod: Any) -> bool:
        return bool(pod["metadata"].get("annotations", {}).get("tag") == "mine")

    make = _maker(kube, namespace, owner, tag="mine")
    found = _create(creations, namespace, owner, make, adoptable=mine, verify=True)
    assert found.adopted
    assert found.pod["metadata"]["name"] == committed["metadata"]["name"]
    assert len(_pods(kube, namespace)) == 1
    other = _create(
        creations, namespace, owner, make, intent="ready-2", adoptable=lambda p: False, verify=True
    )
    assert not other.adopted
    assert len(_pods(kube, namespace)) == 2
