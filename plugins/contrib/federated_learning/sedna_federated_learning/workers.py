"""The worker parameters of Sedna's FL pods: the aggregator and the training workers.

Parity with `createAggPod`/`createTrainPod` of Sedna's federatedlearning controller:
the same env names and values, the same mounts, worker types, host network and restart
policy. Pure functions of the job's inputs, so every pod of a job is built the same
way after a restart. The aggregator's address is derived from the job itself
(`<job>-aggregation.<namespace>`), never kept in the controller: Sedna kept it in one
controller-wide field that the last-created job's Service overwrote (Sedna issue 466).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from sedna.runtime import TRAIN_POD_TYPE, MountURL, WorkerMount, WorkerParam

from .spec import JobSpec, StorageRef, TrainingWorker

AGGREGATION_WORKER = "Aggregation"  # Sedna's jobStageAgg; labels and names lowercase it
TRAINING_WORKER = TRAIN_POD_TYPE
AGG_PORT = 7363
RESTART_POLICY = "OnFailure"
# k8s.io/apimachinery/pkg/util/rand's alphabet (no vowels, no confusable digits)
_RAND_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


@dataclass(frozen=True)
class JobInfo:
    namespace: str
    name: str
    lc_server: str

    @property
    def aggregator_host(self) -> str:
        """What Sedna's `CreateEdgeMeshService` returns: `<service>.<namespace>`."""
        return f"{self.name}-{AGGREGATION_WORKER}".lower() + f".{self.namespace}"


@dataclass(frozen=True)
class Inputs:
    """The Models and Datasets a job's workers mount, already looked up."""

    model: StorageRef
    pretrained: StorageRef | None
    datasets: dict[str, StorageRef]  # by Dataset name


def _rand(n: int = 5) -> str:
    return "".join(secrets.choice(_RAND_ALPHABET) for _ in range(n))


def _mount(
    mounts: list[WorkerMount],
    ref: StorageRef | None,
    env_name: str,
    field: str,
    secret_field: str,
) -> None:
    if ref is None or not ref.url:
        return
    url = MountURL(
        ref.url,
        download_by_initializer=True,
        secret_name=ref.credential_name or None,
        secret_field=secret_field,
        field=field,
    )
    mounts.append(WorkerMount(url=url, env_name=env_name))


def _transmitter(param: WorkerParam, spec: JobSpec) -> None:
    """Sedna's `addTransmitterToWorkerParam`: ws unless an S3 transmitter is given."""
    if spec.s3 is None:
        param.env["TRANSMITTER"] = "ws"
        return
    param.env["TRANSMITTER"] = "s3"
    url = MountURL(
        spec.s3.agg_data_path,
        secret_name=spec.s3.credential_name or None,
        secret_field="spec.transmitter.s3.credentialName",
        field="spec.transmitter.s3.aggDataPath",
    )
    param.mounts.append(WorkerMount(url=url, env_name="AGG_DATA_PATH"))


def _model_mounts(mounts: list[WorkerMount], spec: JobSpec, inputs: Inputs) -> None:
    _mount(
        mounts,
        inputs.model,
        "MODEL_URL",
        f"Model {spec.model} (spec.aggregationWorker.model.name): spec.url",
        f"Model {spec.model}: spec.credentialName",
    )
    _mount(
        mounts,
        inputs.pretrained,
        "PRETRAINED_MODEL_URL",
        f"Model {spec.pretrained_model} (spec.pretrainedModel.name): spec.url",
        f"Model {spec.pretrained_model}: spec.credentialName",
    )


def aggregation_param(job: JobInfo, spec: JobSpec, inputs: Inputs) -> WorkerParam:
    """The aggregator: binds 7363, knows how many training workers will join."""
    param = WorkerParam(
        worker_type=AGGREGATION_WORKER,
        env={
            "NAMESPACE": job.namespace,
            "WORKER_NAME": "aggworker-" + _rand(),
            "JOB_NAME": job.name,
            "AGG_BIND_PORT": str(AGG_PORT),
            "PARTICIPANTS_COUNT": str(len(spec.training)),
        },
        restart_policy=RESTART_POLICY,
    )
    _transmitter(param, spec)
    _model_mounts(param.mounts, spec, inputs)
    return param


def training_param(
    job: JobInfo, spec: JobSpec, worker: TrainingWorker, inputs: Inputs
) -> WorkerParam:
    """One training worker: its Dataset, the aggregator's address, its node's LC."""
    param = WorkerParam(
        worker_type=TRAINING_WORKER, host_network=True, restart_policy=RESTART_POLICY
    )
    _model_mounts(param.mounts, spec, inputs)
    _mount(
        param.mounts,
        inputs.datasets.get(worker.dataset),
        "TRAIN_DATASET_URL",
        f"Dataset {worker.dataset} ({worker.field}.dataset.name): spec.url",
        f"Dataset {worker.dataset}: spec.credentialName",
    )
    param.env.update(
        {
            "AGG_PORT": str(AGG_PORT),
            "AGG_IP": job.aggregator_host,
            "WORKER_NAME": "trainworker-" + _rand(),
            "JOB_NAME": job.name,
            "PARTICIPANTS_COUNT": str(len(spec.training)),
            "NAMESPACE": job.namespace,
            "MODEL_NAME": spec.model,
            "DATASET_NAME": worker.dataset,
            "LC_SERVER": job.lc_server,
        }
    )
    _transmitter(param, spec)
    return param
