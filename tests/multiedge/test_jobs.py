"""ReidJob and VideoAnalyticsJob: one worker pod (and VA's Service) with Sedna's names
and env, job status through a life (phase Running, conditions Completed or Failed as
Sedna's, times and counts),
healing, a restart without duplicates, LC reports kept, malformed specs and reports."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from support.logs import LogCapture

from sedna.runtime import MODELS
from sedna.runtime.kube import NotFound

from .helpers import GM, Api, TestLC, env_of, model, reid_job, video_analytics_job, wait_until

REID = ("ReidJob", "reid-demo", "reid")
VA = ("VideoAnalyticsJob", "va-demo", "videoanalytics")


def start(make_gm: Any, api: Api, kind: str, **spec: Any) -> GM:
    gm: GM = make_gm()
    if kind == "ReidJob":
        api.create(reid_job(**spec))
    else:
        api.create(model("va-model"))
        api.create(video_analytics_job(**spec))
    return gm


def test_reid_pod_has_sednas_name_labels_and_env(make_gm: Any, api: Api) -> None:
    kind, name, wtype = REID
    start(make_gm, api, kind, kafkaSupport=True)
    (pod,) = api.wait_pods(name, 1, wtype)
    assert pod["metadata"]["name"].startswith(f"{name}-reid-")
    labels = pod["metadata"]["labels"]
    assert labels["reidjob.sedna.io/name"] == name
    assert labels["reidjob.sedna.io/worker-type"] == "reid"
    env = env_of(pod["spec"])
    assert env["JOB_NAME"] == name and env["NAMESPACE"] == api.ns
    assert env["LC_SERVER"] == "http://localhost:9100" and env["KAFKA_ENABLED"] == "true"
    assert len(env["WORKER_NAME"]) == 5
    assert pod["spec"]["restartPolicy"] == "Never"
    assert api.services.list(api.ns)["items"] == []  # Sedna's ReidPort is never used


def test_video_analytics_pod_and_service(make_gm: Any, api: Api) -> None:
    kind, name, wtype = VA
    start(make_gm, api, kind)
    (pod,) = api.wait_pods(name, 1, wtype)
    assert pod["metadata"]["name"].startswith(f"{name}-videoanalytics-")
    env = env_of(pod["spec"])
    assert env["MODEL_NAME"] == "va-model" and env["JOB_NAME"] == name
    assert env["MODEL_URL"] == "/downloads/models/m.pth"
    assert "KAFKA_ENABLED" not in env
    assert pod["spec"]["initContainers"][0]["name"] == "storage-initializer"
    svc = api.wait_service(f"{name}-videoanalytics")
    assert [(p["name"], p["port"]) for p in svc["spec"]["ports"]] == [("tcp-0", 4000)]
    assert svc["spec"]["selector"]["videoanalyticsjob.sedna.io/worker-type"] == "videoanalytics"


@pytest.mark.parametrize("job", [REID, VA], ids=["reid", "videoanalytics"])
def test_a_life_to_completed(make_gm: Any, api: Api, job: tuple[str, str, str]) -> None:
    kind, name, wtype = job
    start(make_gm, api, kind)
    (pod,) = api.wait_pods(name, 1, wtype)
    status = api.wait_status(kind, name, lambda s: s.get("phase") == "Running", "Running")
    assert status["startTime"] and status["active"] == 1 and "completionTime" not in status
    api.set_phase(pod, "Running")
    api.set_phase(pod, "Succeeded")
    status = api.wait_condition(kind, name, "Completed")
    assert (status["phase"], status["active"], status["succeeded"], status["failed"]) == (
        "Succeeded",
        0,
        1,
        0,
    )
    assert status["completionTime"]
    api.wait_event_on(name, "Completed")
    # finished: a deleted pod is not made again and the status stays
    api.pods.delete(api.ns, pod["metadata"]["name"])
    wait_until(lambda: not api.pods_of(name), 5.0, "pod gone")
    api.owners[kind].patch(api.ns, name, {"metadata": {"labels": {"touched": "1"}}})
    assert api.pods_of(name) == []
    assert api.status(kind, name)["succeeded"] == 1


@pytest.mark.parametrize("job", [REID, VA], ids=["reid", "videoanalytics"])
def test_the_conditions_are_sednas_completed_or_failed_only(
    make_gm: Any, api: Api, job: tuple[str, str, str]
) -> None:
    """Sedna's Go GM writes a job's phase Running but no Running condition; neither do
    we (a job waiting for its Model is the exception: see the next test)."""
    kind, name, wtype = job
    start(make_gm, api, kind)
    (pod,) = api.wait_pods(name, 1, wtype)
    api.set_phase(pod, "Running")
    api.wait_status(kind, name, lambda s: s.get("active") == 1 and s.get("phase") == "Running",
                    "running")  # fmt: skip
    api.owners[kind].patch(api.ns, name, {"metadata": {"labels": {"touched": "1"}}})  # a sync
    api.wait_event_on(name, "SuccessfulCreate")
    assert "conditions" not in api.status(kind, name)
    api.set_phase(pod, "Succeeded")
    status = api.wait_condition(kind, name, "Completed")
    assert [c["type"] for c in status["conditions"]] == ["Completed"]
    assert status["phase"] == "Succeeded"


@pytest.mark.parametrize("job", [REID, VA], ids=["reid", "videoanalytics"])
def test_a_failed_worker_fails_the_job_for_good(
    make_gm: Any, api: Api, job: tuple[str, str, str]
) -> None:
    kind, name, wtype = job
    start(make_gm, api, kind)
    (pod,) = api.wait_pods(name, 1, wtype)
    api.set_phase(pod, "Failed")
    status = api.wait_condition(kind, name, "Failed")
    assert (status["phase"], status["failed"]) == ("Failed", 1)
    assert status["conditions"][-1]["reason"] == "workerFailed"
    api.wait_event_on(name, "workerFailed")
    api.pods.delete(api.ns, pod["metadata"]["name"])
    wait_until(lambda: not api.pods_of(name), 5.0, "pod gone")
    assert api.condition(kind, name) == "Failed"


@pytest.mark.parametrize("job", [REID, VA], ids=["reid", "videoanalytics"])
def test_a_deleted_running_worker_is_made_again_once_and_restart(
    make_gm: Any, api: Api, job: tuple[str, str, str]
) -> None:
    kind, name, wtype = job
    gm = start(make_gm, api, kind)
    (pod,) = api.wait_pods(name, 1, wtype)
    api.pods.delete(api.ns, pod["metadata"]["name"])
    (new,) = api.wait_pods(name, 1, wtype)
    assert new["metadata"]["name"] != pod["metadata"]["name"]
    assert env_of(new["spec"])["WORKER_NAME"] == env_of(pod["spec"])["WORKER_NAME"]
    gm.restart()
    api.set_phase(new, "Running")
    api.wait_status(kind, name, lambda s: s.get("active") == 1, "active")
    api.owners[kind].patch(api.ns, name, {"metadata": {"labels": {"touched": "1"}}})
    api.wait_event_on(name, "SuccessfulCreate")
    assert [p["metadata"]["name"] for p in api.pods_of(name)] == [new["metadata"]["name"]]


@pytest.mark.parametrize("job", [REID, VA], ids=["reid", "videoanalytics"])
def test_reports_are_kept_in_the_latest_condition(
    make_gm: Any, api: Api, make_lc: Any, logs: LogCapture, job: tuple[str, str, str]
) -> None:
    kind, name, wtype = job
    gm = start(make_gm, api, kind)
    (pod,) = api.wait_pods(name, 1, wtype)
    api.wait_status(kind, name, lambda s: s.get("phase") == "Running", "phase Running")
    edge0: TestLC = make_lc(gm, "edge0")
    intruder: TestLC = make_lc(gm, "edge9")
    info = {"ownerInfo": {"persons": 3, "camera": "c1", "updateTime": "t"}}
    intruder.report(api.ns, kind, name, {"phase": "inference", "output": info})
    logs.wait("edge9", kind, name, "none of its workers runs on that node")
    edge0.report(api.ns, kind, name, {"phase": 7})
    logs.wait("edge0", kind, name, "content.phase")
    api.wait_event_on(name, "InvalidReport", "content.phase")
    edge0.report(api.ns, kind, name, {"phase": "inference", "status": "ok", "output": info})
    status = api.wait_status(
        kind, name, lambda s: (s.get("conditions") or [{}])[-1].get("data"), "report data"
    )
    assert status["conditions"][-1]["data"] == '{"camera":"c1","persons":3}'
    # the job had no condition (as in Sedna): the report's holds it
    assert [c["type"] for c in status["conditions"]] == ["Running"]
    assert pod["spec"]["nodeName"] == "edge0"


def _no_template(spec: dict[str, Any]) -> None:
    spec.pop("template")


def _env_list(spec: dict[str, Any]) -> None:
    spec["template"]["spec"]["containers"][0]["env"] = [{"name": "SOURCES", "value": ["a", "b"]}]


def _bad_kafka(spec: dict[str, Any]) -> None:
    spec["kafkaSupport"] = "true"


def _bad_name(spec: dict[str, Any]) -> None:
    spec["template"]["spec"]["containers"][0]["name"] = "Reid_Worker"


def _bad_ports(spec: dict[str, Any]) -> None:
    spec["template"]["spec"]["containers"][0]["ports"] = "x"  # the API server refuses it


CASES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("no-template", _no_template, "spec.template"),
    ("bad-ports", _bad_ports, "spec.template.spec.containers[0].ports"),
    ("env-list", _env_list, "spec.template.spec.containers[0].env[0].value"),
    ("bad-kafka", _bad_kafka, "spec.kafkaSupport"),
    ("bad-name", _bad_name, "spec.template.spec.containers[0].name"),
]


@pytest.mark.parametrize("job", [REID, VA], ids=["reid", "videoanalytics"])
def test_malformed_specs_name_the_field(make_gm: Any, api: Api, job: tuple[str, str, str]) -> None:
    kind, _name, _wtype = job
    make_gm()
    api.create(model("va-model"))
    for name, edit, _field in CASES:
        obj = reid_job(name) if kind == "ReidJob" else video_analytics_job(name)
        edit(obj["spec"])
        api.create(obj)
    for name, _edit, field in CASES:
        status = api.wait_condition(kind, name, "Failed")
        assert status["conditions"][-1]["reason"] == "InvalidSpec"
        assert status["conditions"][-1]["message"].startswith(field + ":"), status
        assert (status["phase"], status["succeeded"]) == ("Failed", 0)
        api.wait_event_on(name, "InvalidSpec", field)
        assert api.pods_of(name) == []


def test_video_analytics_waits_for_its_model(make_gm: Any, api: Api) -> None:
    make_gm()
    api.create(video_analytics_job())
    status = api.wait_condition("VideoAnalyticsJob", "va-demo", "Pending")
    assert status["conditions"][-1]["reason"] == "ModelNotFound"
    # a job has a phase from its first sync, as Sedna's (which says Running here)
    assert (status["phase"], status["active"], status["succeeded"]) == ("Pending", 0, 0)
    api.create(model("va-model"))
    (pod,) = api.wait_pods("va-demo", 1, "videoanalytics")
    # the Pending condition would now contradict the phase: Running goes over it
    api.set_phase(pod, "Running")
    status = api.wait_condition("VideoAnalyticsJob", "va-demo", "Running")
    assert status["phase"] == "Running"
    assert [c["type"] for c in status["conditions"]] == ["Pending", "Running"]


def test_a_model_deleted_under_a_running_worker_leaves_the_job_to_its_worker(
    make_gm: Any, api: Api
) -> None:
    """As in Sedna, the Model matters only to make the worker: once it is made, a deleted
    Model neither stalls the job in Pending nor keeps it from completing."""
    kind, name, wtype = VA
    start(make_gm, api, kind)
    (pod,) = api.wait_pods(name, 1, wtype)
    api.set_phase(pod, "Running")
    api.wait_status(kind, name, lambda s: s.get("phase") == "Running", "phase Running")
    api.kube.resource(MODELS).delete(api.ns, "va-model")
    api.owners[kind].patch(api.ns, name, {"metadata": {"labels": {"touched": "1"}}})
    api.set_phase(pod, "Succeeded")
    status = api.wait_condition(kind, name, "Completed")
    assert (status["phase"], status["succeeded"], status["active"]) == ("Succeeded", 1, 0)
    assert "Pending" not in {c["type"] for c in status["conditions"]}
    assert [p["metadata"]["name"] for p in api.pods_of(name)] == [pod["metadata"]["name"]]


def _reid_probe(make_gm: Any, api: Api) -> tuple[Any, dict[str, Any], tuple[Any, ...]]:
    """A running ReidJob's bare-pod controller, the job as owner, and one more wanted pod
    (`probe`) that its own plan does not name."""
    gm = start(make_gm, api, "ReidJob")
    kind, name, wtype = REID
    api.wait_pods(name, 1, wtype)
    assert gm.manager is not None
    controller = next(f.controller for f in gm.manager.features if f.name == "reid")
    # its workers stop (its informers go on): a sync of its own would prune the probe,
    # which no plan names, between the test's two calls
    controller.stop()
    owner = {**api.owner(kind, name), "kind": kind, "apiVersion": "sedna.io/v1alpha1"}
    want = controller.plan(owner).pods[0]  # type: ignore[attr-defined]
    probe = (dataclasses.replace(want, key="probe"),)
    pods = controller.owned_pods  # type: ignore[attr-defined]
    return pods, owner, probe


def test_a_create_not_yet_in_the_cache_is_not_repeated(make_gm: Any, api: Api) -> None:
    """Expectations: a sync that does not see the pod the previous one created (the cache
    lags) makes no second pod."""
    pods, owner, probe = _reid_probe(make_gm, api)
    first = pods.ensure(owner, probe, [])
    second = pods.ensure(owner, probe, [])  # the cache has not shown the first one's pod
    assert (len(first.created), first.active) == (1, 1)
    assert (second.created, second.active) == ([], 1)


def test_a_made_pod_deleted_before_a_sync_saw_it_is_made_again_at_once(
    make_gm: Any, api: Api
) -> None:
    """The DELETE event of a pod still expected ends the expectation: a sync that never
    saw the pod in the cache makes it again (not 300 s later, when it expires)."""
    pods, owner, probe = _reid_probe(make_gm, api)
    first = pods.ensure(owner, probe, [])  # made and expected; the cache is not shown it
    (made,) = first.created
    with contextlib.suppress(NotFound):  # the controller prunes it too: no want names it
        api.pods.delete(api.ns, made.removeprefix("Pod "))
    again: list[str] = []

    def made_again() -> bool:
        again.extend(pods.ensure(owner, probe, []).created)
        return bool(again)

    wait_until(made_again, 10.0, "the probe made again after its delete was seen")
    assert len(again) == 1 and again[0] != made


def test_a_model_secret_that_is_missing_is_named(make_gm: Any, api: Api) -> None:
    make_gm()
    api.create(model("va-model", credentialName="s3-creds"))
    api.create(video_analytics_job())
    status = api.wait_condition("VideoAnalyticsJob", "va-demo", "Pending")
    cond = status["conditions"][-1]
    assert cond["reason"] == "SecretNotFound"
    assert "Model va-model: spec.credentialName" in cond["message"]
    assert "s3-creds" in cond["message"]
    api.wait_event_on("va-demo", "SecretNotFound", "s3-creds")
    assert api.pods_of("va-demo") == []
    # not a spec error: once the secret appears, the retry starts the job, no edit needed
    api.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s3-creds", "annotations": {"s3-endpoint": "s3.local"}},
            "stringData": {"ACCESS_KEY_ID": "a", "SECRET_ACCESS_KEY": "b"},
        }
    )
    # the retry backs off from 5 s (doubling), so allow for a second look
    pods = wait_until(lambda: api.pods_of("va-demo", "videoanalytics"), 40.0, "the job's pod")
    (pod,) = pods
    init = pod["spec"]["initContainers"][0]
    refs = [e for e in init.get("env") or [] if "valueFrom" in e]
    assert refs and all(e["valueFrom"]["secretKeyRef"]["name"] == "s3-creds" for e in refs)
