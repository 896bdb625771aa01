"""GM restarts and kills in every phase: the API is the database, names are fixed, so
there is never a second Deployment, Service, HPA or pod, and no condition is repeated."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from support.deployments import DeploymentControllerFactory

from sedna.embedded.apiserver import APIServer
from sedna.runtime import OwnedWorkloads, SharedInformerFactory
from sedna.runtime.workloads.owned import OwnerGone

from .conftest import GMFactory
from .helpers import (
    CLOUD_DEPLOYMENT,
    CLOUD_SERVICE,
    EDGE_DEPLOYMENT,
    JIS,
    SAMPLE,
    Api,
    env_of,
    sample_service,
    wait_until,
)


def uids(api: Api) -> dict[str, str]:
    out = {}
    for client in (api.deployments, api.services, api.hpas, api.pods):
        for o in client.list(api.ns)["items"]:
            out[f"{o.get('kind', client.res.kind)}/{o['metadata']['name']}"] = o["metadata"]["uid"]
    return out


def with_hpa(ref: Path) -> dict[str, Any]:
    ji = sample_service(ref)
    ji["spec"]["cloudWorker"]["hpa"] = {"minReplicas": 1, "maxReplicas": 2}
    return ji


def expected_names() -> list[str]:
    return sorted([CLOUD_DEPLOYMENT, EDGE_DEPLOYMENT])


def test_created_while_the_gm_is_down(
    api: Api,
    make_gm: GMFactory,
    deployment_controller: DeploymentControllerFactory,
    sample_dir: Path,
) -> None:
    deployment_controller()
    api.create_models()
    api.create(with_hpa(sample_dir))
    make_gm()
    api.until_running()
    assert api.names("deployments") == expected_names()
    assert api.names("services") == [CLOUD_SERVICE]
    assert api.names("hpas") == [f"hpa-{CLOUD_DEPLOYMENT}"]


def test_restart_while_pending_and_while_running_changes_nothing(
    api: Api,
    make_gm: GMFactory,
    deployment_controller: DeploymentControllerFactory,
    sample_dir: Path,
) -> None:
    deployment_controller()
    api.create_models()
    gm = make_gm()
    api.create(with_hpa(sample_dir))
    api.wait_condition("Pending")
    wait_until(lambda: len(api.names("pods")) == 2, 10.0, "pods")
    before = uids(api)
    gm.restart()
    api.until_running()
    assert {k: v for k, v in uids(api).items() if k in before} == before
    assert len(api.names("pods")) == 2
    running = uids(api)
    conditions = api.status()["conditions"]
    gm.restart()
    assert gm.manager is not None
    controller: Any = gm.manager.features[0].controller
    controller.enqueue(f"{api.ns}/{SAMPLE}")
    assert controller.wait_idle(5)
    assert uids(api) == running
    assert api.status()["conditions"] == conditions


def test_a_spec_change_while_the_gm_is_down_is_rolled_out_on_start(
    api: Api,
    make_gm: GMFactory,
    deployment_controller: DeploymentControllerFactory,
    sample_dir: Path,
) -> None:
    deployment_controller()
    api.create_models()
    gm = make_gm()
    api.create(sample_service(sample_dir))
    api.until_running()
    gm.stop()
    api.patch_spec({"edgeWorker": {"hardExampleMining": {"name": "CrossEntropy"}}})
    gm.start()
    api.wait_deployment(EDGE_DEPLOYMENT, lambda d: env_of(d)["HEM_NAME"] == "CrossEntropy")
    assert api.names("deployments") == expected_names()


def test_killed_after_the_service_and_between_the_deployments(
    api: Api,
    embedded_apiserver: APIServer,
    make_gm: GMFactory,
    deployment_controller: DeploymentControllerFactory,
    sample_dir: Path,
) -> None:
    """Deployment creates fail (the GM dies after the Service): a new GM completes the set;
    then the state of a GM killed between the two Deployments (edge missing) is completed
    without touching the cloud one."""
    api.create_models()
    rule = embedded_apiserver.faults.fail(500, verbs=["create"], resources=["deployments"])
    gm = make_gm()
    api.create(sample_service(sample_dir))
    wait_until(lambda: rule.seen >= 1, 10.0, "a refused deployment create")
    gm.stop()
    embedded_apiserver.faults.reset()
    assert api.names("services") == [CLOUD_SERVICE] and api.names("deployments") == []
    deployment_controller()
    service_uid = api.services.get(api.ns, CLOUD_SERVICE)["metadata"]["uid"]
    gm.start()
    api.until_running()
    assert api.names("deployments") == expected_names()
    assert api.services.get(api.ns, CLOUD_SERVICE)["metadata"]["uid"] == service_uid

    gm.stop()
    cloud_uid = api.deployments.get(api.ns, CLOUD_DEPLOYMENT)["metadata"]["uid"]
    api.deployments.delete(api.ns, EDGE_DEPLOYMENT)
    wait_until(lambda: len(api.names("pods")) == 1, 10.0, "the edge pod collected")
    gm.start()
    wait_until(lambda: api.names("deployments") == expected_names(), 10.0, "the edge one again")
    wait_until(lambda: len(api.names("pods")) == 2, 10.0, "its pod")
    api.until_running()
    assert api.deployments.get(api.ns, CLOUD_DEPLOYMENT)["metadata"]["uid"] == cloud_uid
    assert len(api.names("pods")) == 2


def test_a_lost_create_response_is_adopted_not_repeated(
    api: Api,
    make_gm: GMFactory,
    deployment_controller: DeploymentControllerFactory,
    sample_dir: Path,
) -> None:
    """An `ensure` whose caches have not seen the objects (as after a create whose response
    was lost) gets AlreadyExists for each and adopts them: nothing created twice."""
    deployment_controller()
    api.create_models()
    gm = make_gm()
    api.create(with_hpa(sample_dir))
    api.until_running()
    before = uids(api)
    assert gm.manager is not None
    controller: Any = gm.manager.features[0].controller
    ctx = gm.manager.context()
    blind = dataclasses.replace(ctx, informers=SharedInformerFactory(ctx.kube, namespace=api.ns))
    workloads = OwnedWorkloads(blind, JIS, lambda key: None)  # informers never started
    owner = controller.with_type(api.ji())
    seen = workloads.ensure(owner, controller.plan(owner))
    assert (seen.created, seen.updated, seen.deleted) == ([], [], [])
    assert set(seen.deployments) == set(expected_names())
    assert uids(api) == before


def _running_and_blind(
    api: Api,
    make_gm: GMFactory,
    deployment_controller: DeploymentControllerFactory,
    sample_dir: Path,
) -> tuple[Any, OwnedWorkloads]:
    """The sample running under a GM, its controller, and an `OwnedWorkloads` whose
    informers never start (a cache that lags everything)."""
    deployment_controller()
    api.create_models()
    gm = make_gm()
    api.create(with_hpa(sample_dir))
    api.until_running()
    assert gm.manager is not None
    controller: Any = gm.manager.features[0].controller
    ctx = gm.manager.context()
    blind = dataclasses.replace(ctx, informers=SharedInformerFactory(ctx.kube, namespace=api.ns))
    return controller, OwnedWorkloads(blind, JIS, lambda key: None)


def test_an_owner_the_cache_still_holds_after_its_delete_gets_nothing_made_again(
    api: Api,
    make_gm: GMFactory,
    deployment_controller: DeploymentControllerFactory,
    sample_dir: Path,
) -> None:
    """The garbage collector's cascade can reach the GM before the owner's own delete:
    a sync then sees its objects gone and the owner still cached. It reads the owner
    from the server before creating and makes nothing (Sedna's Go GM makes them again,
    with a reference to an owner that is gone, and they stay)."""
    controller, workloads = _running_and_blind(api, make_gm, deployment_controller, sample_dir)
    owner = controller.with_type(api.ji())  # the copy a lagging cache would hold
    plan = controller.plan(owner)
    api.jis.delete(api.ns, SAMPLE)
    wait_until(lambda: not api.names("deployments") and not api.names("services"), 10.0, "GC")
    with pytest.raises(OwnerGone):
        workloads.ensure(owner, plan)
    assert (api.names("deployments"), api.names("services"), api.names("hpas")) == ([], [], [])
    # ...and one created anew under the same name is not the stale copy's owner
    api.create(with_hpa(sample_dir))
    with pytest.raises(OwnerGone):
        workloads.ensure(owner, plan)


def test_only_an_owner_that_had_a_pass_is_read_back_before_a_create(
    api: Api,
    embedded_apiserver: APIServer,
    make_gm: GMFactory,
    deployment_controller: DeploymentControllerFactory,
    sample_dir: Path,
) -> None:
    """An owner without a status has had no pass finish, so no dependents of its can be
    deleted ahead of it: a pass for it creates without reading it from the server. One
    with a status is read first, and a gone one gets nothing."""
    controller, workloads = _running_and_blind(api, make_gm, deployment_controller, sample_dir)
    owner = controller.with_type(api.ji())
    assert owner.get("status")
    fresh = {k: v for k, v in owner.items() if k != "status"}  # as before its first pass
    plan = controller.plan(owner)
    controller.stop()  # its syncs would read the owner too (its cache may lag the delete)
    api.jis.delete(api.ns, SAMPLE)
    wait_until(lambda: not api.names("deployments") and not api.names("services"), 10.0, "GC")
    reads = embedded_apiserver.faults.fail(
        every=10**9, verbs=["get"], resources=["jointinferenceservices"]
    )  # counts the reads of the owner, fails none
    seen = workloads.ensure(fresh, plan)
    assert reads.seen == 0
    assert sorted(seen.deployments) == expected_names()
    assert api.names("deployments") == expected_names()
    for name in api.names("deployments"):
        refs = api.deployments.get(api.ns, name)["metadata"]["ownerReferences"]
        assert [r["uid"] for r in refs] == [owner["metadata"]["uid"]]  # the GC's to remove
    for name in api.names("deployments"):
        api.deployments.delete(api.ns, name)
    wait_until(lambda: not api.names("deployments"), 10.0, "deployments deleted")
    with pytest.raises(OwnerGone):
        workloads.ensure(owner, plan)
    assert reads.seen == 1
    assert api.names("deployments") == []


def test_status_writes_survive_conflicts(
    api: Api,
    embedded_apiserver: APIServer,
    make_gm: GMFactory,
    deployment_controller: DeploymentControllerFactory,
    sample_dir: Path,
) -> None:
    deployment_controller()
    api.create_models()
    rule = embedded_apiserver.faults.fail(
        409, verbs=["update"], resources=["jointinferenceservices/status"], count=3
    )
    make_gm()
    api.create(sample_service(sample_dir))
    api.until_running()
    assert rule.remaining == 0
    assert api.condition_types() == ["Pending", "Running"]
    assert api.ji()["metadata"]["name"] == SAMPLE
