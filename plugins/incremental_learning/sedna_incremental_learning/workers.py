"""The WorkerParams of the three workers, exactly as Sedna's controller fills them.

Env names, mount env names, which secret goes with which URL, restart policy and host
network are what Sedna's worker images and the storage initializer expect; the pod
itself is built by the runtime's `WorkerRuntime` from these parameters.

Secrets "as Sedna picks them": the job's `credentialName` for what the job writes or
the LC produced (output dir, train data, models that are not the initial model), the
initial Model's for the initial model's URL, the Dataset's for dataset URLs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from sedna.runtime import (
    STAGE_RESTART_POLICY,
    ModelHotUpdate,
    MountURL,
    NamedDataset,
    WorkerMount,
    WorkerParam,
    original_dataset,
    random_suffix,
)
from sedna.runtime import StageInputError as InputError

from .spec import CondData, JobSpec, ModelSpec

TRAIN_WORKER = "train"
EVAL_WORKER = "eval"
INFERENCE_WORKER = "inference"


@dataclass(frozen=True)
class JobInfo:
    namespace: str
    name: str
    lc_server: str


@dataclass(frozen=True)
class NamedModel:
    name: str
    spec: ModelSpec


def _base_env(job: JobInfo, worker_name: str) -> dict[str, str]:
    return {
        "NAMESPACE": job.namespace,
        "JOB_NAME": job.name,
        "WORKER_NAME": worker_name,
        "LC_SERVER": job.lc_server,
    }


def _secret(name: str) -> str | None:
    return name or None


def _model_secret(url: str, initial: NamedModel, job_spec: JobSpec) -> tuple[str | None, str]:
    if url == initial.spec.url:
        return _secret(initial.spec.credentialName), f"Model {initial.name}: spec.credentialName"
    return _secret(job_spec.credentialName), "spec.credentialName"


def train_param(
    job: JobInfo,
    spec: JobSpec,
    data: CondData,
    initial: NamedModel,
    dataset: NamedDataset,
    data_field: str,
    suffix: Callable[[], str] = random_suffix,
) -> WorkerParam:
    """Train: BASE_MODEL_URL, MODEL_URL (output dir), TRAIN_DATASET_URL, ORIGINAL_DATASET_URL."""
    if data.input is None:
        raise InputError(f"{data_field}.input", "empty input from condition data")
    urls = data.input.model_urls()
    if not urls:
        # Sedna indexes [0] and panics here.
        raise InputError(f"{data_field}.input.models", "no input model to train from")
    base_url = urls[0]
    base_secret, base_field = _model_secret(base_url, initial, spec)
    job_secret = _secret(spec.credentialName)
    mounts = [
        WorkerMount(
            url=MountURL(
                url=base_url,
                secret_name=base_secret,
                secret_field=base_field,
                download_by_initializer=True,
                field=f"{data_field}.input.models[0].url",
            ),
            env_name="BASE_MODEL_URL",
        ),
        WorkerMount(
            url=MountURL(
                url=data.input.outputDir,
                secret_name=job_secret,
                download_by_initializer=False,
                field=f"{data_field}.input.outputDir",
            ),
            env_name="MODEL_URL",
        ),
        WorkerMount(
            url=MountURL(
                url=data.input.dataURL,
                secret_name=job_secret,
                download_by_initializer=True,
                field=f"{data_field}.input.dataURL",
            ),
            env_name="TRAIN_DATASET_URL",
        ),
        original_dataset(data, dataset),
    ]
    return WorkerParam(
        worker_type=TRAIN_WORKER,
        mounts=mounts,
        env=_base_env(job, "train-worker-" + suffix()),
        restart_policy=STAGE_RESTART_POLICY,
        host_network=True,
    )


def eval_param(
    job: JobInfo,
    spec: JobSpec,
    data: CondData,
    initial: NamedModel,
    dataset: NamedDataset,
    data_field: str,
    suffix: Callable[[], str] = random_suffix,
) -> WorkerParam:
    """Eval: MODEL_URLS (every input model), TEST_DATASET_URL, ORIGINAL_DATASET_URL."""
    if data.input is None:
        raise InputError(f"{data_field}.input", "empty input from condition data")
    model_urls = []
    for i, url in enumerate(data.input.model_urls()):
        secret, secret_field = _model_secret(url, initial, spec)
        model_urls.append(
            MountURL(
                url=url,
                secret_name=secret,
                secret_field=secret_field,
                download_by_initializer=True,
                field=f"{data_field}.input.models[{i}].url",
            )
        )
    dataset_secret = _secret(dataset.spec.credentialName)
    mounts = [
        WorkerMount(urls=tuple(model_urls), name="models", env_name="MODEL_URLS"),
        WorkerMount(
            url=MountURL(
                url=data.input.dataURL,
                secret_name=dataset_secret,
                secret_field=f"Dataset {dataset.name}: spec.credentialName",
                download_by_initializer=True,
                field=f"{data_field}.input.dataURL",
            ),
            name="datasets",
            env_name="TEST_DATASET_URL",
        ),
        original_dataset(data, dataset, name="origin-dataset"),
    ]
    return WorkerParam(
        worker_type=EVAL_WORKER,
        mounts=mounts,
        env=_base_env(job, "eval-worker-" + suffix()),
        restart_policy=STAGE_RESTART_POLICY,
        host_network=True,
    )


def hem_parameters(spec: JobSpec) -> str:
    """`json.Marshal(parameters)`: a list of {key, value}, `null` when unset."""
    params = spec.deploySpec.hardExampleMining.parameters
    if params is None:
        return "null"
    return json.dumps([{"key": p.key, "value": p.value} for p in params], separators=(",", ":"))


def inference_param(
    job: JobInfo,
    spec: JobSpec,
    deploy_model: NamedModel,
    suffix: Callable[[], str] = random_suffix,
) -> WorkerParam:
    """Inference: MODEL_URL of the deploy Model, HEM_NAME/HEM_PARAMETERS, hot update.

    No restart policy: Sedna leaves the template's (default Always) for this worker.
    """
    env = _base_env(job, "inferworker-" + suffix())
    # Sedna's env order: NAMESPACE, JOB_NAME, WORKER_NAME, HEM_NAME, HEM_PARAMETERS, LC_SERVER
    lc = env.pop("LC_SERVER")
    env["HEM_NAME"] = spec.deploySpec.hardExampleMining.name
    env["HEM_PARAMETERS"] = hem_parameters(spec)
    env["LC_SERVER"] = lc
    model = spec.deploySpec.model
    hot = (
        ModelHotUpdate(enable=True, poll_period_seconds=model.pollPeriodSeconds)
        if model.hotUpdateEnabled
        else ModelHotUpdate()
    )
    mounts = [
        WorkerMount(
            url=MountURL(
                url=deploy_model.spec.url,
                secret_name=_secret(deploy_model.spec.credentialName),
                secret_field=f"Model {deploy_model.name}: spec.credentialName",
                download_by_initializer=True,
                field=f"Model {deploy_model.name}: spec.url",
            ),
            name="model",
            env_name="MODEL_URL",
        )
    ]
    return WorkerParam(
        worker_type=INFERENCE_WORKER,
        mounts=mounts,
        env=env,
        model_hot_update=hot,
        host_network=True,
    )
