"""Model hot update: the inference worker polls a config file for a new model.

The GM mounts a per-job host directory; the LC writes ``model_config.json``
there when a better model is deployed (it finds the file through the job
annotation ``sedna.io/model-hot-update-config``). Paths and names are
Sedna's, since the LC and the sedna library compute them too.
"""

from __future__ import annotations

from typing import Any

from sedna.runtime.workers.labels import JobRef
from sedna.runtime.workers.paths import convert_k8s_valid_name, go_join, go_split
from sedna.runtime.workers.types import ModelHotUpdate

__all__ = [
    "MODEL_HOT_UPDATE_ANNOTATION_KEY",
    "MODEL_HOT_UPDATE_CONFIG_FILE",
    "MODEL_HOT_UPDATE_CONTAINER_PREFIX",
    "MODEL_HOT_UPDATE_HOST_PREFIX",
    "MODEL_HOT_UPDATE_VOLUME_NAME",
    "hot_update_env",
    "hot_update_volume",
    "model_hot_update_config_file",
]

MODEL_HOT_UPDATE_HOST_PREFIX = "/var/lib/sedna/model-hot-update"
MODEL_HOT_UPDATE_CONTAINER_PREFIX = "/model-hot-update"
MODEL_HOT_UPDATE_VOLUME_NAME = "sedna-model-hot-update-volume"
MODEL_HOT_UPDATE_CONFIG_FILE = "model_config.json"
MODEL_HOT_UPDATE_ANNOTATION_KEY = "sedna.io/model-hot-update-config"


def model_hot_update_config_file(job: JobRef, prefix: str = MODEL_HOT_UPDATE_HOST_PREFIX) -> str:
    """``<prefix>/<ns>/<kind>/<name>/model_config.json``, lowercased as in Sedna.

    The feature controller writes this (host prefix) into the job annotation
    ``sedna.io/model-hot-update-config`` after creating the inference worker.
    """
    return go_join(prefix, job.namespace, job.kind, job.name, MODEL_HOT_UPDATE_CONFIG_FILE).lower()


def hot_update_volume(job: JobRef) -> tuple[dict[str, Any], dict[str, Any]]:
    """The host-path volume (created if absent) and its mount at ``/model-hot-update``."""
    name = convert_k8s_valid_name(MODEL_HOT_UPDATE_VOLUME_NAME)
    host_dir = go_split(model_hot_update_config_file(job))[0]
    volume = {"name": name, "hostPath": {"path": host_dir, "type": "DirectoryOrCreate"}}
    mount = {"mountPath": MODEL_HOT_UPDATE_CONTAINER_PREFIX, "name": name}
    return volume, mount


def hot_update_env(hot: ModelHotUpdate) -> dict[str, str]:
    """Env vars telling the inference worker to poll, how often and which file."""
    return {
        "MODEL_HOT_UPDATE": "true",
        "MODEL_POLL_PERIOD_SECONDS": str(int(hot.poll_period_seconds)),
        "MODEL_HOT_UPDATE_CONFIG": go_join(
            MODEL_HOT_UPDATE_CONTAINER_PREFIX, MODEL_HOT_UPDATE_CONFIG_FILE
        ),
    }
