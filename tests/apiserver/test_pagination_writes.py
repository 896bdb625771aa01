"""Paginated lists while the resource changes between pages.

Every page of a list shows the snapshot of its first page, whatever is created,
deleted, re-created or modified in between, and ``remainingItemCount`` counts that
snapshot too; this is what etcd's range reads at a revision give kube-apiserver.
"""

from __future__ import annotations

import contextlib
import random
import uuid
from typing import Any

import kubernetes

ApiClient = kubernetes.client.ApiClient


def _cm(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


def _pages_with_writes(
    list_page: Any, limit: int, between: Any, **kw: Any
) -> list[kubernetes.client.V1ConfigMapList]:
    """Every page, calling ``between(i)`` before asking for page ``i`` (i >= 1)."""
    pages = [list_page(limit=limit, **kw)]
    while pages[-1].metadata._continue:
        assert len(pages) < 100, "continue never ends"
        between(len(pages))
        pages.append(list_page(limit=limit, _continue=pages[-1].metadata._continue, **kw))
    return pages


def test_pages_keep_their_snapshot_through_churn(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    names = [f"c{i:02d}" for i in range(30)]
    for name in names:
        core.create_namespaced_config_map(namespace, _cm(name, v="0"))
    rng = random.Random(16)
    live = set(names)
    fresh = iter(f"{n}{s}" for n in names for s in ("a", "b", "c"))

    def churn(_: int) -> None:
        for _ in range(4):
            op = rng.choice(("delete", "create", "recreate", "patch"))
            if op == "delete" and live:
                gone = rng.choice(sorted(live))
                core.delete_namespaced_config_map(gone, namespace)
                live.discard(gone)
            elif op == "create":
                name = next(fresh)
                core.create_namespaced_config_map(namespace, _cm(name, v="new"))
                live.add(name)
            elif op == "recreate":
                back = rng.choice(names)
                if back not in live:
                    core.create_namespaced_config_map(namespace, _cm(back, v="again"))
                    live.add(back)
            elif live:
                core.patch_namespaced_config_map(
                    rng.choice(sorted(live)), namespace, {"metadata": {"labels": {"v": "1"}}}
                )

    pages = _pages_with_writes(core.list_namespaced_config_map, 4, churn, namespace=namespace)
    got = [o.metadata.name for p in pages for o in p.items]
    assert got == names
    assert {o.metadata.labels["v"] for p in pages for o in p.items} == {"0"}
    assert {p.metadata.resource_version for p in pages} == {pages[0].metadata.resource_version}
    seen = 0
    for p in pages:
        seen += len(p.items)
        want = 30 - seen if p.metadata._continue else None
        assert p.metadata.remaining_item_count == want
    # and a new list sees the writes
    now = [o.metadata.name for o in core.list_namespaced_config_map(namespace).items]
    assert now == sorted(live)


def test_deleted_then_recreated_object_shows_as_it_was(
    api_client: ApiClient, namespace: str
) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    for name in ("a", "b", "c"):
        core.create_namespaced_config_map(namespace, _cm(name, v="old"))
    first = core.list_namespaced_config_map(namespace, limit=1)
    old_uid = core.read_namespaced_config_map("b", namespace).metadata.uid
    core.delete_namespaced_config_map("b", namespace)
    core.create_namespaced_config_map(namespace, _cm("b", v="new"))
    core.create_namespaced_config_map(namespace, _cm("bb", v="new"))  # created ...
    core.delete_namespaced_config_map("bb", namespace)  # ... and gone again: never shown
    core.delete_namespaced_config_map("c", namespace)
    rest = core.list_namespaced_config_map(namespace, limit=5, _continue=first.metadata._continue)
    assert [(o.metadata.name, o.metadata.labels["v"]) for o in rest.items] == [
        ("b", "old"),
        ("c", "old"),
    ]
    assert rest.items[0].metadata.uid == old_uid
    assert rest.metadata._continue is None


def test_continue_after_everything_left_was_deleted(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    for name in ("a", "b", "c", "d"):
        core.create_namespaced_config_map(namespace, _cm(name))
    first = core.list_namespaced_config_map(namespace, limit=2)
    assert first.metadata.remaining_item_count == 2
    for name in ("c", "d"):
        core.delete_namespaced_config_map(name, namespace)
    rest = core.list_namespaced_config_map(namespace, limit=1, _continue=first.metadata._continue)
    assert [o.metadata.name for o in rest.items] == ["c"]
    assert rest.metadata.remaining_item_count == 1
    last = core.list_namespaced_config_map(namespace, limit=1, _continue=rest.metadata._continue)
    assert [o.metadata.name for o in last.items] == ["d"]
    assert last.metadata._continue is None
    assert [o.metadata.name for o in core.list_namespaced_config_map(namespace).items] == [
        "a",
        "b",
    ]


def test_all_namespaces_pages_keep_their_snapshot(api_client: ApiClient, namespace: str) -> None:
    """Across namespaces the key is ``namespace/name``: writes in a namespace the list
    has not reached yet, and in one it has passed, do not show."""
    core = kubernetes.client.CoreV1Api(api_client)
    other = f"{namespace}-b"  # sorts before ``namespace``
    core.create_namespace({"metadata": {"name": other}})
    run = uuid.uuid4().hex[:8]
    try:
        for ns in (other, namespace):
            for name in ("x", "y", "z"):
                core.create_namespaced_config_map(ns, _cm(name, run=run))
        want = [(ns, n) for ns in (other, namespace) for n in ("x", "y", "z")]

        def churn(i: int) -> None:
            if i == 1:  # still in ``other``: delete ahead in both namespaces
                core.delete_namespaced_config_map("z", other)
                core.delete_namespaced_config_map("x", namespace)
                core.create_namespaced_config_map(namespace, _cm("w", run=run))
            if i == 3:  # past ``other``: a new object there is behind the list
                core.create_namespaced_config_map(other, _cm("zz", run=run))

        pages = _pages_with_writes(
            core.list_config_map_for_all_namespaces, 2, churn, label_selector=f"run={run}"
        )
        got = [(o.metadata.namespace, o.metadata.name) for p in pages for o in p.items]
        assert got == want
        assert all(p.metadata.remaining_item_count is None for p in pages)  # selector
    finally:
        core.delete_namespace(other)


def test_snapshot_of_a_cluster_scoped_kind(api_client: ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    run = uuid.uuid4().hex[:8]
    mine = [f"{namespace}-{i}" for i in range(4)]
    for name in mine:
        core.create_namespace({"metadata": {"name": name, "labels": {"run": run}}})
    try:
        first = core.list_namespace(limit=1, label_selector=f"run={run}")
        assert [o.metadata.name for o in first.items] == mine[:1]
        core.delete_namespace(mine[2])
        rest = core.list_namespace(
            limit=10, label_selector=f"run={run}", _continue=first.metadata._continue
        )
        assert [o.metadata.name for o in rest.items] == mine[1:]
    finally:
        for name in mine:
            with contextlib.suppress(kubernetes.client.ApiException):
                core.delete_namespace(name)
