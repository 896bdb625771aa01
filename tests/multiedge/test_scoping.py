"""The family's Deployment and Service caches hold only what the owner's kind labels.

Foreign objects are not cached; an owned one whose label is removed (or one made
without it, as by an older GM) is adopted by name and labelled again; a foreign object
of a planned name is found through the API and its going is seen by the recheck.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from support.logs import LogCapture

from sedna.runtime import FakeClock
from sedna.runtime.informers import SharedInformer
from sedna.runtime.kube import DEPLOYMENTS, FEATURE_EXTRACTION_SERVICES, SERVICES, Resource
from sedna.runtime.workloads.controller import CONFLICT_RECHECK_SECONDS

from .helpers import GM, Api, feature_extraction, model, wait_until

KIND = "FeatureExtractionService"
NAME = "fe-demo"
DEPLOYMENT = f"{NAME}-deployment-fe"
SERVICE = f"{NAME}-fe"
LABEL = "featureextractionservice.sedna.io/name"


def _foreign_deployment(name: str) -> dict[str, Any]:
    sel = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": sel},
        "spec": {
            "selector": {"matchLabels": sel},
            "template": {"metadata": {"labels": sel},
                         "spec": {"containers": [{"name": "c", "image": "foreign"}]}},
        },
    }  # fmt: skip


def _foreign_service(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"ports": [{"port": 80}]},
    }


def poll(pred: Callable[[], bool], seconds: float) -> bool:
    """Whether `pred` holds within `seconds` of real time."""
    try:
        wait_until(pred, seconds, "")
    except AssertionError:
        return False
    return True


def _informers(gm: GM) -> Any:
    assert gm.manager is not None
    return gm.manager.container.informers()


def _cache(gm: GM, res: Resource) -> SharedInformer:
    inf: SharedInformer = _informers(gm).owned_by_kind(res, FEATURE_EXTRACTION_SERVICES)
    return inf


def _cached_names(gm: GM, res: Resource) -> set[str]:
    return {str(o["metadata"]["name"]) for o in _cache(gm, res).lister.list()}


def test_foreign_deployments_and_services_are_not_cached_and_owned_ones_are(
    make_gm: Any, api: Api
) -> None:
    api.deployments.create(api.ns, _foreign_deployment("web-early"))
    api.services.create(api.ns, _foreign_service("web-early"))
    gm: GM = make_gm(features=["feature_extraction"])
    api.create(model("fe-model"))
    api.create(feature_extraction())
    api.wait_deployment(DEPLOYMENT)
    api.wait_service(SERVICE)
    api.deployments.create(api.ns, _foreign_deployment("web-late"))
    api.services.create(api.ns, _foreign_service("web-late"))
    wait_until(lambda: _cached_names(gm, DEPLOYMENTS) == {DEPLOYMENT}, 10.0, "owned Deployment")
    wait_until(lambda: _cached_names(gm, SERVICES) == {SERVICE}, 10.0, "owned Service")
    # a marker after the foreign writes: nothing foreign was cached before it
    api.deployments.patch(api.ns, DEPLOYMENT, {"metadata": {"annotations": {"marker": "1"}}})
    wait_until(
        lambda: (_cache(gm, DEPLOYMENTS).lister.get(api.ns, DEPLOYMENT) or {})
        .get("metadata", {}).get("annotations", {}).get("marker") == "1",
        10.0,
        "the marker",
    )  # fmt: skip
    assert _cached_names(gm, DEPLOYMENTS) == {DEPLOYMENT}
    assert _cached_names(gm, SERVICES) == {SERVICE}
    # and no informer of the GM lists Deployments or Services unscoped
    unscoped = [
        inf.name
        for inf in _informers(gm).informers
        if inf.resource in (DEPLOYMENTS, SERVICES) and not inf.label_selector
    ]
    assert unscoped == []


def test_an_owned_object_relabelled_out_is_dropped_then_labelled_again(
    make_gm: Any, api: Api, logs: LogCapture
) -> None:
    gm: GM = make_gm(features=["feature_extraction"])
    api.create(model("fe-model"))
    api.create(feature_extraction())
    api.wait_deployment(DEPLOYMENT)
    api.wait_service(SERVICE)
    wait_until(lambda: _cached_names(gm, SERVICES) == {SERVICE}, 10.0, "cached")
    for client, res, name in ((api.deployments, DEPLOYMENTS, DEPLOYMENT),
                              (api.services, SERVICES, SERVICE)):  # fmt: skip
        uid = client.get(api.ns, name)["metadata"]["uid"]
        client.patch(api.ns, name, {"metadata": {"labels": {LABEL: None}}})
        # the watch drops it; its DELETE wakes the owner, which adopts and relabels it
        logs.wait(f"{res.kind} {name} lacked its worker labels")
        relabelled = client.get(api.ns, name)
        assert relabelled["metadata"]["labels"][LABEL] == NAME
        assert relabelled["metadata"]["uid"] == uid  # the same object, not a new one
        wait_until(lambda r=res, n=name: n in _cached_names(gm, r), 10.0, f"{name} cached again")


def test_an_owned_service_without_labels_from_an_older_gm_is_adopted_and_labelled(
    make_gm: Any, api: Api
) -> None:
    api.create(model("fe-model"))
    owner = api.create(feature_extraction())
    ref = {"apiVersion": "sedna.io/v1alpha1", "kind": KIND, "name": NAME,
           "uid": owner["metadata"]["uid"], "controller": True}  # fmt: skip
    old = _foreign_service(SERVICE)
    old["metadata"]["ownerReferences"] = [ref]
    uid = api.services.create(api.ns, old)["metadata"]["uid"]
    gm: GM = make_gm(features=["feature_extraction"])
    api.wait_deployment(DEPLOYMENT)
    wait_until(lambda: SERVICE in _cached_names(gm, SERVICES), 10.0, "the old Service cached")
    svc = api.services.get(api.ns, SERVICE)
    assert svc["metadata"]["uid"] == uid
    assert svc["metadata"]["labels"][LABEL] == NAME
    assert svc["spec"]["ports"][0]["port"] == 6000  # and rolled out to the plan


def test_a_foreign_deployment_of_the_planned_name_is_rechecked_until_it_goes(
    make_gm: Any, api: Api
) -> None:
    api.deployments.create(api.ns, _foreign_deployment(DEPLOYMENT))
    clock = FakeClock()
    make_gm(features=["feature_extraction"], clock=clock)
    api.create(model("fe-model"))
    api.create(feature_extraction())
    api.wait_event_on(NAME, "NameConflict", DEPLOYMENT)
    assert api.condition(KIND, NAME) == "Failed"
    foreign = api.deployment(DEPLOYMENT)
    assert "ownerReferences" not in foreign["metadata"]
    api.deployments.delete(api.ns, DEPLOYMENT)

    def ours() -> bool:
        dep = api._maybe(api.deployments, DEPLOYMENT)
        return dep is not None and bool(dep["metadata"].get("ownerReferences"))

    # virtual time far below a resync (an hour here): only the recheck can find it gone
    for _ in range(int(4 * CONFLICT_RECHECK_SECONDS)):
        clock.step(1.0)
        if poll(ours, 0.25):
            break
    assert ours(), "the planned Deployment is made after the conflict's recheck"
