"""WorkerRuntime behaviour beyond the pod shape: GC, purity, adjusters, selectors."""

from __future__ import annotations

import copy
from typing import Any

from sedna.runtime.kube import INCREMENTAL_LEARNING_JOBS, PODS, KubeClient, NotFound
from sedna.runtime.workers import (
    MODEL_HOT_UPDATE_ANNOTATION_KEY,
    JobRef,
    ModelHotUpdate,
    MountURL,
    WorkerMount,
    WorkerParam,
    WorkerRuntime,
    job_ref,
    job_selector,
    label_selector_string,
    model_hot_update_config_file,
    worker_selector,
)

from .il_params import inference_param, train_or_eval_param
from .test_pod_parity import TRAIN_COND

TEMPLATE = {"spec": {"containers": [{"name": "w", "image": "busybox"}]}}


def _il_pods(runtime: WorkerRuntime, w: dict[str, Any]) -> list[dict[str, Any]]:
    job = w["job"]
    return [
        runtime.create_pod_with_template(
            job,
            job["spec"]["trainSpec"]["template"],
            train_or_eval_param("train", job, w["initial-model"], w["dataset"], TRAIN_COND),
        ),
        runtime.create_pod_with_template(
            job, job["spec"]["deploySpec"]["template"], inference_param(job, w["deploy-model"])
        ),
    ]


def test_owner_reference_garbage_collection(
    kube: KubeClient, namespace: str, il_world: dict[str, Any]
) -> None:
    runtime = WorkerRuntime(kube)
    created = _il_pods(runtime, il_world)
    kube.resource(INCREMENTAL_LEARNING_JOBS).delete(
        namespace, "helmet-detection-demo", propagation_policy="Background"
    )
    for pod in created:
        try:
            got = kube.resource(PODS).get(namespace, pod["metadata"]["name"])
        except NotFound:
            continue
        # a real cluster collects asynchronously; deletion must at least be under way
        assert got["metadata"].get("deletionTimestamp")


def test_selectors_find_the_workers(
    kube: KubeClient, namespace: str, il_world: dict[str, Any]
) -> None:
    runtime = WorkerRuntime(kube)
    _il_pods(runtime, il_world)
    job = il_world["job"]
    uid = job["metadata"]["uid"]
    assert job_selector(job) == {
        "incrementallearningjob.sedna.io/name": "helmet-detection-demo",
        "incrementallearningjob.sedna.io/uid": uid,
    }
    sel = worker_selector(job, "Inference")
    assert sel["incrementallearningjob.sedna.io/worker-type"] == "inference"
    assert label_selector_string(sel) == (
        "incrementallearningjob.sedna.io/name=helmet-detection-demo,"
        f"incrementallearningjob.sedna.io/uid={uid},"
        "incrementallearningjob.sedna.io/worker-type=inference"
    )
    pods = kube.resource(PODS)
    all_pods = pods.list(namespace, label_selector=label_selector_string(job_selector(job)))
    infer = pods.list(namespace, label_selector=label_selector_string(sel))
    assert len(all_pods["items"]) == 2
    assert [p["metadata"]["generateName"] for p in infer["items"]] == [
        "helmet-detection-demo-inference-"
    ]


def test_build_does_not_mutate_job_template_or_param(
    kube: KubeClient, il_world: dict[str, Any]
) -> None:
    job = il_world["job"]
    job["spec"]["deploySpec"]["template"]["metadata"] = {"labels": {"app": "x"}}
    before = copy.deepcopy(job)
    param = inference_param(job, il_world["deploy-model"])
    param.model_hot_update = ModelHotUpdate(True, 30)
    param_before = copy.deepcopy(param)
    runtime = WorkerRuntime(kube)
    first = runtime.build_pod(job, job["spec"]["deploySpec"]["template"], param)
    second = runtime.build_pod(job, job["spec"]["deploySpec"]["template"], param)
    assert job == before
    assert param == param_before
    assert first == second
    first["spec"]["containers"][0]["env"].clear()
    assert job == before


def test_pod_adjusters_run_before_create(kube: KubeClient, il_world: dict[str, Any]) -> None:
    seen: list[tuple[str, str]] = []

    def adjust(pod: dict[str, Any], job: Any, worker_type: str) -> None:
        seen.append((job["metadata"]["name"], worker_type))
        pod["metadata"].setdefault("annotations", {})["adjusted"] = worker_type

    runtime = WorkerRuntime(kube, pod_adjusters=[adjust])
    created = runtime.create_pod_with_template(
        il_world["job"], TEMPLATE, WorkerParam(worker_type="Eval")
    )
    assert seen == [("helmet-detection-demo", "eval")]
    assert created["metadata"]["annotations"] == {"adjusted": "eval"}
    assert (
        "annotations"
        not in runtime.build_pod(il_world["job"], TEMPLATE, WorkerParam(worker_type="Eval"))[
            "metadata"
        ]
    )


def test_hot_update_only_for_inference(kube: KubeClient, il_world: dict[str, Any]) -> None:
    param = WorkerParam(worker_type="train", model_hot_update=ModelHotUpdate(True, 10))
    pod = WorkerRuntime(kube).build_pod(il_world["job"], TEMPLATE, param)
    assert "volumes" not in pod["spec"]
    assert "env" not in pod["spec"]["containers"][0]


def test_hot_update_config_file_for_the_annotation(il_world: dict[str, Any]) -> None:
    ref = job_ref(il_world["job"])
    ns = ref.namespace
    assert MODEL_HOT_UPDATE_ANNOTATION_KEY == "sedna.io/model-hot-update-config"
    assert model_hot_update_config_file(ref) == (
        f"/var/lib/sedna/model-hot-update/{ns}/incrementallearningjob/"
        "helmet-detection-demo/model_config.json"
    )
    upper = JobRef("sedna.io/v1alpha1", "LifelongLearningJob", "NS", "Job", "u")
    assert model_hot_update_config_file(upper, "/model-hot-update") == (
        "/model-hot-update/ns/lifelonglearningjob/job/model_config.json"
    )


def test_where_we_improve_on_go(kube: KubeClient, il_world: dict[str, Any]) -> None:
    """Go would send duplicate volume names / mount paths / env names (rejected or shadowed)."""
    template = {
        "spec": {
            "containers": [
                {
                    "name": "w",
                    "image": "busybox",
                    "env": [{"name": "MODEL_URL", "value": "user"}, {"name": "KEEP", "value": "1"}],
                }
            ]
        }
    }
    param = WorkerParam(
        worker_type="train",
        env={"MODEL_URL": "ignored, the mount sets it"},
        mounts=[
            # "/a_b/" and "/a-b/" both fold to the volume name "a-bz"
            WorkerMount(url=MountURL("/a_b/x.txt"), env_name="A"),
            WorkerMount(url=MountURL("/a-b/y.txt"), env_name="B"),
            # two files of one directory: Go mounts the directory twice
            WorkerMount(url=MountURL("/data/train.txt"), env_name="TRAIN"),
            WorkerMount(url=MountURL("/data/test.txt"), env_name="MODEL_URL"),
        ],
    )
    spec = WorkerRuntime(kube).build_pod(il_world["job"], template, param)["spec"]
    assert spec["volumes"] == [
        {"name": "a-bz", "hostPath": {"path": "/a_b/", "type": "Directory"}},
        {"name": "a-bz-2", "hostPath": {"path": "/a-b/", "type": "Directory"}},
        {"name": "dataz", "hostPath": {"path": "/data/", "type": "Directory"}},
    ]
    c = spec["containers"][0]
    assert c["volumeMounts"] == [
        {"mountPath": "/home/data/a_b/", "name": "a-bz"},
        {"mountPath": "/home/data/a-b/", "name": "a-bz-2"},
        {"mountPath": "/home/data/data/", "name": "dataz"},
    ]
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert len(env) == len(c["env"])
    assert env["MODEL_URL"] == "/home/data/data/test.txt"
    assert env["KEEP"] == "1"
