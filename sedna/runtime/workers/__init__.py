"""The worker runtime: worker pods, storage initializer, credentials, hot update.

Sedna's ``pkg/globalmanager/runtime`` worker half, in parity (labels, names,
env, mounts) so the LC, the storage initializer and the sedna library work
unchanged, with the Go GM's silent failures turned into :class:`WorkerError`.
"""

from __future__ import annotations

from sedna.runtime.workers.creations import CreatedPod, PodCreations, answer_lost, read_owned_pods
from sedna.runtime.workers.credentials import CredentialInjection, s3_secret_envs
from sedna.runtime.workers.deployments import APP_LABEL_KEY
from sedna.runtime.workers.errors import WorkerError
from sedna.runtime.workers.helpers import (
    DEFAULT_BACKOFF,
    MAX_BACKOFF,
    active_deployment_count,
    active_pod_count,
    backoff_for,
    backoff_for_requeues,
    convert_map_to_metrics,
    node_ip,
)
from sedna.runtime.workers.hot_update import (
    MODEL_HOT_UPDATE_ANNOTATION_KEY,
    MODEL_HOT_UPDATE_CONFIG_FILE,
    MODEL_HOT_UPDATE_CONTAINER_PREFIX,
    MODEL_HOT_UPDATE_HOST_PREFIX,
    model_hot_update_config_file,
)
from sedna.runtime.workers.labels import (
    JobRef,
    controller_owner_reference,
    generate_labels,
    job_ref,
    job_selector,
    label_selector_string,
    worker_selector,
)
from sedna.runtime.workers.paths import convert_k8s_valid_name
from sedna.runtime.workers.runtime import PodAdjuster, WorkerRuntime
from sedna.runtime.workers.storage import DEFAULT_STORAGE_INITIALIZER_IMAGE
from sedna.runtime.workers.types import (
    EVAL_POD_TYPE,
    INFERENCE_POD_TYPE,
    TRAIN_POD_TYPE,
    ModelHotUpdate,
    MountURL,
    WorkerMount,
    WorkerParam,
)

__all__ = [
    "APP_LABEL_KEY",
    "DEFAULT_BACKOFF",
    "DEFAULT_STORAGE_INITIALIZER_IMAGE",
    "EVAL_POD_TYPE",
    "INFERENCE_POD_TYPE",
    "MAX_BACKOFF",
    "MODEL_HOT_UPDATE_ANNOTATION_KEY",
    "MODEL_HOT_UPDATE_CONFIG_FILE",
    "MODEL_HOT_UPDATE_CONTAINER_PREFIX",
    "MODEL_HOT_UPDATE_HOST_PREFIX",
    "TRAIN_POD_TYPE",
    "CreatedPod",
    "CredentialInjection",
    "JobRef",
    "ModelHotUpdate",
    "MountURL",
    "PodAdjuster",
    "PodCreations",
    "WorkerError",
    "WorkerMount",
    "WorkerParam",
    "WorkerRuntime",
    "active_deployment_count",
    "active_pod_count",
    "answer_lost",
    "backoff_for",
    "backoff_for_requeues",
    "controller_owner_reference",
    "convert_k8s_valid_name",
    "convert_map_to_metrics",
    "generate_labels",
    "job_ref",
    "job_selector",
    "label_selector_string",
    "model_hot_update_config_file",
    "node_ip",
    "read_owned_pods",
    "s3_secret_envs",
    "worker_selector",
]
