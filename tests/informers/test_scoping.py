"""Label-scoped worker pod informers and transforms before caching.

At fleet size the GM must not hold the cluster's other pods: ``worker_pods`` lists and
watches only pods labelled for one feature kind, and every cache drops what no
controller reads. All through the official client and the in-process API server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sedna.embedded.apiserver import APIServer
from sedna.runtime.informers import SharedInformerFactory, worker_label_key
from sedna.runtime.informers.transforms import (
    LAST_APPLIED_ANNOTATION,
    SubtreeSharing,
    strip_bookkeeping,
    worker_pod_transform,
)
from sedna.runtime.kube import (
    CONFIGMAPS,
    DEPLOYMENTS,
    HPAS,
    INCREMENTAL_LEARNING_JOBS,
    JOINT_INFERENCE_SERVICES,
    PODS,
    SERVICES,
    KubeClient,
    Resource,
)

from .helpers import Recorder, pod, wait_until

Factory = Callable[..., SharedInformerFactory]
IL_NAME = "incrementallearningjob.sedna.io/name"


def names(objs: list[Any]) -> set[str]:
    return {str(o["metadata"]["name"]) for o in objs}


def test_the_worker_label_key_is_sednas() -> None:
    assert worker_label_key(INCREMENTAL_LEARNING_JOBS) == IL_NAME


def test_worker_pods_lists_and_watches_only_labelled_pods(
    kube: KubeClient, make_factory: Factory, namespace: str, srv: APIServer
) -> None:
    pods = kube.resource(PODS)
    pods.create(namespace, pod("mine-early", labels={IL_NAME: "job"}))
    pods.create(namespace, pod("foreign-early", labels={"app": "web"}))
    pods.create(namespace, pod("other-kind", labels={"lifelonglearningjob.sedna.io/name": "j"}))
    f = make_factory(namespace=namespace)
    inf = f.worker_pods(INCREMENTAL_LEARNING_JOBS)
    assert inf is f.worker_pods(INCREMENTAL_LEARNING_JOBS)  # shared per kind
    assert inf.label_selector == IL_NAME
    rec = Recorder()
    inf.add_event_handler(rec)
    f.start()
    assert f.wait_for_cache_sync(5)
    assert names(inf.lister.list()) == {"mine-early"}

    pods.create(namespace, pod("mine-late", labels={IL_NAME: "job"}))
    pods.create(namespace, pod("foreign-late"))
    pods.patch(namespace, "foreign-late", {"metadata": {"annotations": {"a": "b"}}})
    pods.delete(namespace, "foreign-early")
    wait_until(lambda: names(inf.lister.list()) == {"mine-early", "mine-late"}, what="mine-late")
    # a marker event after the foreign writes: nothing foreign came before it
    pods.patch(namespace, "mine-late", {"metadata": {"annotations": {"marker": "1"}}})
    wait_until(lambda: ("update", "mine-late") in rec.ops(), what="marker")
    assert rec.ops() == [("add", "mine-early"), ("add", "mine-late"), ("update", "mine-late")]


def test_a_pod_relabelled_into_scope_is_added_and_one_relabelled_out_is_deleted(
    kube: KubeClient, make_factory: Factory, namespace: str, srv: APIServer
) -> None:
    pods = kube.resource(PODS)
    pods.create(namespace, pod("p"))
    f = make_factory(namespace=namespace)
    inf = f.worker_pods(INCREMENTAL_LEARNING_JOBS)
    rec = Recorder()
    inf.add_event_handler(rec)
    f.start()
    assert f.wait_for_cache_sync(5)
    assert inf.lister.list() == []

    pods.patch(namespace, "p", {"metadata": {"labels": {IL_NAME: "job"}}})
    wait_until(lambda: inf.lister.get(namespace, "p") is not None, what="relabelled in")
    # handlers run after the store is updated: wait for the event too
    wait_until(lambda: len(rec.events) == 1, what="the add")
    assert rec.ops() == [("add", "p")]

    pods.patch(namespace, "p", {"metadata": {"labels": {IL_NAME: None}}})
    wait_until(lambda: inf.lister.get(namespace, "p") is None, what="relabelled out")
    wait_until(lambda: len(rec.events) == 2, what="the delete")
    assert rec.ops() == [("add", "p"), ("delete", "p")]

    # and back in again after a relist (a restart) as well
    pods.patch(namespace, "p", {"metadata": {"labels": {IL_NAME: "again"}}})
    wait_until(lambda: inf.lister.get(namespace, "p") is not None, what="in again")
    wait_until(lambda: len(rec.events) == 3, what="the add again")
    assert rec.ops()[-1] == ("add", "p")


def test_every_informer_drops_managed_fields_and_last_applied_before_caching(
    kube: KubeClient, make_factory: Factory, namespace: str, srv: APIServer
) -> None:
    cms = kube.resource(CONFIGMAPS)
    heavy = {
        "managedFields": [{"manager": "kubectl", "operation": "Apply", "fieldsV1": {"f:x": {}}}],
        "annotations": {LAST_APPLIED_ANNOTATION: '{"big": "object"}', "keep": "me"},
    }
    cms.create(namespace, {"metadata": {"name": "listed", **heavy}, "data": {"k": "v"}})
    f = make_factory(namespace=namespace)
    inf = f.informer(CONFIGMAPS)
    rec = Recorder()
    inf.add_event_handler(rec)
    f.start()
    assert f.wait_for_cache_sync(5)
    cms.create(namespace, {"metadata": {"name": "watched", **heavy}, "data": {"k": "v"}})
    wait_until(lambda: len(inf.lister.list()) == 2, what="both cached")
    # handlers run after the store is updated: wait for them too, not only the cache
    wait_until(lambda: len(rec.events) == 2, what="both handled")
    # the server keeps both (as kube-apiserver does): the cache is what drops them
    stored = cms.get(namespace, "watched")["metadata"]
    assert stored["managedFields"] and LAST_APPLIED_ANNOTATION in stored["annotations"]
    for obj in inf.lister.list():
        meta = obj["metadata"]
        assert "managedFields" not in meta
        assert meta["annotations"] == {"keep": "me"}
        assert obj["data"] == {"k": "v"}
    # handlers see exactly the cached objects
    assert {id(p) for _, _, p in rec.events} == {id(o) for o in inf.lister.list()}


def test_a_transform_is_applied_on_list_and_watch_and_none_keeps_objects_whole(
    kube: KubeClient, make_factory: Factory, namespace: str, srv: APIServer
) -> None:
    pods = kube.resource(PODS)
    pods.create(namespace, pod("listed", labels={IL_NAME: "j"}))
    calls: list[str] = []

    def tag(obj: dict[str, Any]) -> dict[str, Any]:
        calls.append(obj["metadata"]["name"])
        obj["metadata"].setdefault("labels", {})["seen"] = "yes"
        return obj

    f = make_factory(namespace=namespace)
    tagged = f.informer(PODS, transform=tag)
    whole = f.informer(PODS, label_selector=IL_NAME, transform=None)
    f.start()
    assert f.wait_for_cache_sync(5)
    pods.create(namespace, pod("watched", labels={IL_NAME: "j"}))
    wait_until(lambda: len(tagged.lister.list()) == 2, what="tagged")
    wait_until(lambda: len(whole.lister.list()) == 2, what="whole")
    assert all(o["metadata"]["labels"]["seen"] == "yes" for o in tagged.lister.list())
    assert all("seen" not in o["metadata"]["labels"] for o in whole.lister.list())
    assert all(o["spec"]["containers"] for o in whole.lister.list())
    assert sorted(calls) == ["listed", "watched"]


def test_asking_for_a_shared_informer_with_another_transform_is_refused(
    make_factory: Factory, namespace: str
) -> None:
    f = make_factory(namespace=namespace)
    f.informer(PODS)
    assert f.informer(PODS, transform=f.default_transform) is f.informer(PODS)
    for other in (strip_bookkeeping, worker_pod_transform, None):
        with pytest.raises(ValueError, match="another transform"):
            f.informer(PODS, transform=other)


def test_a_failing_transform_caches_the_object_as_it_came(
    kube: KubeClient, make_factory: Factory, namespace: str, srv: APIServer
) -> None:
    def broken(obj: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("bug")

    f = make_factory(namespace=namespace)
    inf = f.informer(CONFIGMAPS, transform=broken)
    f.start()
    assert f.wait_for_cache_sync(5)
    kube.resource(CONFIGMAPS).create(namespace, {"metadata": {"name": "c"}, "data": {"a": "b"}})
    wait_until(lambda: inf.lister.get(namespace, "c") is not None, what="cached")
    assert inf.lister.get(namespace, "c")["data"] == {"a": "b"}
    assert inf.stats.handler_errors == 1


def test_the_worker_pod_transform_keeps_metadata_status_and_where_it_runs() -> None:
    obj = {
        "metadata": {"name": "p", "labels": {"a": "b"}, "managedFields": [{}]},
        "spec": {
            "nodeName": "edge",
            "restartPolicy": "OnFailure",
            "nodeSelector": {"k": "v"},
            "containers": [{"name": "c", "image": "i", "env": [{"name": "E", "value": "v"}]}],
            "volumes": [{"name": "v"}],
        },
        "status": {
            "phase": "Running",
            "startTime": "t",
            "conditions": [{"type": "Ready"}],
            "containerStatuses": [{"name": "c", "imageID": "x"}],
        },
    }
    out = worker_pod_transform(obj)
    assert out["metadata"] == {"name": "p", "labels": {"a": "b"}}
    assert out["spec"] == {
        "nodeName": "edge",
        "restartPolicy": "OnFailure",
        "nodeSelector": {"k": "v"},
    }
    assert out["status"] == {"phase": "Running", "startTime": "t"}
    assert worker_pod_transform(out) == out  # idempotent


def test_alike_specs_are_cached_once_and_different_ones_apart(
    kube: KubeClient, make_factory: Factory, namespace: str, srv: APIServer
) -> None:
    pods = kube.resource(PODS)
    for name in ("a", "b"):
        pods.create(namespace, pod(name))
    f = make_factory(namespace=namespace)
    inf = f.informer(PODS)
    f.start()
    assert f.wait_for_cache_sync(5)
    other = pod("c")
    other["spec"]["containers"][0]["image"] = "other"
    pods.create(namespace, other)
    pods.create(namespace, pod("d"))  # watched, alike to the listed ones
    wait_until(lambda: len(inf.lister.list()) == 4, what="all cached")
    a, b, c, d = (inf.lister.get(namespace, n) for n in "abcd")
    assert a["spec"]["containers"] is b["spec"]["containers"] is d["spec"]["containers"]
    assert c["spec"]["containers"] is not a["spec"]["containers"]
    assert c["spec"]["containers"][0]["image"] == "other"
    # equal to what the server holds, object by object
    for name, obj in zip("abcd", (a, b, c, d), strict=True):
        assert obj["spec"] == pods.get(namespace, name)["spec"]


def test_the_sharing_table_is_bounded_and_keeps_the_latest() -> None:
    share = SubtreeSharing(max_entries=3)
    objs = [share({"metadata": {"name": str(i)}, "spec": {"t": {"i": i}}}) for i in range(10)]
    assert len(share) == 3
    again = share({"metadata": {"name": "x"}, "spec": {"t": {"i": 9}}})
    assert again["spec"]["t"] is objs[9]["spec"]["t"]
    old = share({"metadata": {"name": "y"}, "spec": {"t": {"i": 0}}})
    assert old["spec"]["t"] is not objs[0]["spec"]["t"]  # forgotten, so cached anew
    assert old["spec"]["t"] == {"i": 0}
    assert len(share) == 3


JI_NAME = "jointinferenceservice.sedna.io/name"


def _deployment(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    sel = {"app": name}
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "selector": {"matchLabels": sel},
            "template": {"metadata": {"labels": sel},
                         "spec": {"containers": [{"name": "c", "image": "i"}]}},
        },
    }  # fmt: skip


def _service(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"ports": [{"port": 80}]}}


def _hpa(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"},
            "maxReplicas": 2,
        },
    }


@pytest.mark.parametrize(
    ("res", "build"),
    [(DEPLOYMENTS, _deployment), (SERVICES, _service), (HPAS, _hpa)],
    ids=["deployments", "services", "hpas"],
)
def test_owned_by_kind_caches_only_what_the_kind_labels_and_follows_relabels(
    kube: KubeClient,
    make_factory: Factory,
    namespace: str,
    srv: APIServer,
    res: Resource,
    build: Callable[..., dict[str, Any]],
) -> None:
    client = kube.resource(res)
    client.create(namespace, build("mine-early", {JI_NAME: "svc"}))
    client.create(namespace, build("foreign-early", {"app": "web"}))
    client.create(namespace, build("other-kind", {IL_NAME: "job"}))
    f = make_factory(namespace=namespace)
    inf = f.owned_by_kind(res, JOINT_INFERENCE_SERVICES)
    assert inf is f.owned_by_kind(res, JOINT_INFERENCE_SERVICES)  # shared per kind
    assert inf.label_selector == JI_NAME
    assert inf is not f.owned_by_kind(res, INCREMENTAL_LEARNING_JOBS)
    rec = Recorder()
    inf.add_event_handler(rec)
    f.start()
    assert f.wait_for_cache_sync(5)
    assert names(inf.lister.list()) == {"mine-early"}

    client.create(namespace, build("foreign-late"))
    client.create(namespace, build("mine-late", {JI_NAME: "svc"}))
    wait_until(lambda: ("add", "mine-late") in rec.ops(), what="mine-late")
    assert names(inf.lister.list()) == {"mine-early", "mine-late"}
    # relabelled into the selector: added; out of it: deleted
    client.patch(namespace, "foreign-late", {"metadata": {"labels": {JI_NAME: "svc"}}})
    wait_until(lambda: ("add", "foreign-late") in rec.ops(), what="relabelled in")
    client.patch(namespace, "mine-early", {"metadata": {"labels": {JI_NAME: None}}})
    wait_until(lambda: ("delete", "mine-early") in rec.ops(), what="relabelled out")
    assert names(inf.lister.list()) == {"mine-late", "foreign-late"}
    assert rec.ops() == [
        ("add", "mine-early"),
        ("add", "mine-late"),
        ("add", "foreign-late"),
        ("delete", "mine-early"),
    ]
