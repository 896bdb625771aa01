"""The WorkerParams of the three workers, exactly as Sedna's LL controller fills them.

All three run with host network and `ClusterFirstWithHostNet` DNS; train and eval get
`OnFailure` as restart policy (unless the template says otherwise), inference keeps the
template's. Secrets as Sedna picks them: the job's `credentialName` for what the job
writes or the LC produced (output dirs, train data, models), the Dataset's for dataset
URLs and the eval data.

Differences from Go, on purpose: an input the stage needs but the Ready report lacks
(`input`, eval models) is an `InputError` naming the field instead of a pod with empty
URLs; a missing secret is an error naming the field that named it (the runtime reads
it), where Go fails the same way but without saying which field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sedna.runtime import (
    STAGE_RESTART_POLICY,
    MountURL,
    NamedDataset,
    WorkerMount,
    WorkerParam,
    original_dataset,
    random_suffix,
)
from sedna.runtime import StageInputError as InputError

from .spec import CondData, JobSpec, cond_data

TRAIN_WORKER = "train"
EVAL_WORKER = "eval"
INFERENCE_WORKER = "inference"

DNS_POLICY = "ClusterFirstWithHostNet"
DEPLOY_MODEL_PATH = "deploy/index.pkl"


@dataclass(frozen=True)
class JobInfo:
    """What every worker's env names: the job and the servers of gm.yaml."""

    namespace: str
    name: str
    lc_server: str
    kb_server: str


def _secret(name: str) -> str | None:
    return name or None


def _output(data: CondData, spec: JobSpec, data_field: str) -> WorkerMount:
    assert data.input is not None
    return WorkerMount(
        url=MountURL(
            url=data.input.outputDir,
            secret_name=_secret(spec.credentialName),
            download_by_initializer=False,
            field=f"{data_field}.input.outputDir",
        ),
        env_name="OUTPUT_URL",
    )


def has_completed_initial_training(conditions: Sequence[Mapping[str, Any]]) -> bool:
    """Whether any Train/Completed condition is in the history (Sedna's rule)."""
    return any(c.get("stage") == "Train" and c.get("type") == "Completed" for c in conditions)


def cloud_kb_index(conditions: Sequence[Mapping[str, Any]]) -> str:
    """The URL of the first output model of the latest Train/Completed report that has
    output models: the cloud knowledge base's index the next round trains on."""
    for c in reversed(conditions):
        if c.get("stage") != "Train" or c.get("type") != "Completed":
            continue
        try:
            data = cond_data(c.get("data"), "condition", "data")
        except ValueError:
            continue
        if data.output is not None and data.output.models:
            return data.output.models[0].url
    return ""


def train_param(
    job: JobInfo,
    spec: JobSpec,
    data: CondData,
    dataset: NamedDataset,
    conditions: Sequence[Mapping[str, Any]],
    data_field: str,
    suffix: Callable[[], str] = random_suffix,
) -> WorkerParam:
    """Train: OUTPUT_URL, TRAIN_DATASET_URL, ORIGINAL_DATASET_URL, KB_SERVER, the KB index."""
    if data.input is None:
        raise InputError(f"{data_field}.input", "empty input from condition data")
    completed = has_completed_initial_training(conditions)
    env = {
        "NAMESPACE": job.namespace,
        "JOB_NAME": job.name,
        "WORKER_NAME": "train-worker-" + suffix(),
        "HAS_COMPLETED_INITIAL_TRAINING": "true" if completed else "false",
        "LC_SERVER": job.lc_server,
        "KB_SERVER": job.kb_server,
    }
    if completed:
        env["CLOUD_KB_INDEX"] = cloud_kb_index(conditions)
    mounts = [
        _output(data, spec, data_field),
        WorkerMount(
            url=MountURL(
                url=data.input.dataURL,
                secret_name=_secret(spec.credentialName),
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
        env=env,
        restart_policy=STAGE_RESTART_POLICY,
        host_network=True,
        dns_policy=DNS_POLICY,
    )


def eval_param(
    job: JobInfo,
    spec: JobSpec,
    data: CondData,
    dataset: NamedDataset,
    data_field: str,
    suffix: Callable[[], str] = random_suffix,
) -> WorkerParam:
    """Eval: MODEL_URLS (every input model), OUTPUT_URL, TEST_DATASET_URL, ORIGINAL_DATASET_URL."""
    if data.input is None:
        raise InputError(f"{data_field}.input", "empty input from condition data")
    urls = data.input.model_urls()
    if not urls:
        raise InputError(f"{data_field}.input.models", "no model to evaluate")
    env = {
        "NAMESPACE": job.namespace,
        "JOB_NAME": job.name,
        "WORKER_NAME": "eval-worker-" + suffix(),
        "LC_SERVER": job.lc_server,
        "KB_SERVER": job.kb_server,
    }
    models = tuple(
        MountURL(
            url=url,
            secret_name=_secret(spec.credentialName),
            download_by_initializer=True,
            field=f"{data_field}.input.models[{i}].url",
        )
        for i, url in enumerate(urls)
    )
    mounts = [
        WorkerMount(urls=models, name="models", env_name="MODEL_URLS"),
        _output(data, spec, data_field),
        WorkerMount(
            url=MountURL(
                url=data.input.dataURL,
                secret_name=_secret(dataset.spec.credentialName),
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
        env=env,
        restart_policy=STAGE_RESTART_POLICY,
        host_network=True,
        dns_policy=DNS_POLICY,
    )


def deploy_model_url(spec: JobSpec) -> str:
    """Where the LC copies the model it deploys: `<outputDir>/deploy/index.pkl`."""
    return f"{spec.outputDir.rstrip('/')}/{DEPLOY_MODEL_PATH}"


def inference_param(
    job: JobInfo, spec: JobSpec, suffix: Callable[[], str] = random_suffix
) -> WorkerParam:
    """Inference: MODEL_URLS (the deployed KB index, read by the worker), OUTPUT_URL.

    No KB_SERVER and no restart policy: Sedna gives the inference worker neither.
    """
    env = {
        "NAMESPACE": job.namespace,
        "JOB_NAME": job.name,
        "WORKER_NAME": "inferworker-" + suffix(),
        "LC_SERVER": job.lc_server,
        "OUTPUT_URL": spec.outputDir,
    }
    mounts = [
        WorkerMount(
            url=MountURL(
                url=deploy_model_url(spec),
                secret_name=_secret(spec.credentialName),
                download_by_initializer=False,
                field="spec.outputDir",
            ),
            name="models",
            env_name="MODEL_URLS",
        )
    ]
    return WorkerParam(
        worker_type=INFERENCE_WORKER,
        mounts=mounts,
        env=env,
        host_network=True,
        dns_policy=DNS_POLICY,
    )
