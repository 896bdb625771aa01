"""Building a worker pod from a job's pod template (Sedna's ``injectWorkerParam``).

Pure: the only input besides the arguments is the secret getter, so the
same job, template and parameters always give the same pod, which is what
makes level-triggered reconciles and the parity fixtures possible.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sedna.runtime.kube.jsoncopy import json_deepcopy
from sedna.runtime.workers.credentials import CredentialInjection
from sedna.runtime.workers.env import env_list, inject_by_key, list_field
from sedna.runtime.workers.hot_update import hot_update_env, hot_update_volume
from sedna.runtime.workers.labels import (
    JobRef,
    controller_owner_reference,
    generate_labels,
    job_ref,
)
from sedna.runtime.workers.storage import SecretGetter, apply_storage, plan_storage
from sedna.runtime.workers.types import INFERENCE_POD_TYPE, WorkerParam

__all__ = ["build_worker_pod", "template_spec"]


def template_spec(job: JobRef, template: Mapping[str, Any], field: str) -> dict[str, Any]:
    """A deep copy of the template's spec; it must have at least one container.

    The copy protects the informer cache the template usually comes from.
    """
    spec = template.get("spec")
    if not isinstance(spec, Mapping):
        raise job.error(f"{field}.spec", "pod template has no spec")
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        raise job.error(f"{field}.spec.containers", "pod template has no containers")
    for i, c in enumerate(containers):
        if not isinstance(c, Mapping):
            raise job.error(f"{field}.spec.containers[{i}]", "container is not an object")
        for key in ("env", "volumeMounts"):
            _list_of_objects(job, c.get(key), f"{field}.spec.containers[{i}].{key}")
    for key in ("volumes", "initContainers"):
        _list_of_objects(job, spec.get(key), f"{field}.spec.{key}")
    meta = template.get("metadata")
    if meta is not None and not isinstance(meta, Mapping):
        raise job.error(f"{field}.metadata", "is not an object")
    for key, kind in (("labels", Mapping), ("annotations", Mapping), ("finalizers", list)):
        value = (meta or {}).get(key)
        if value is not None and not isinstance(value, kind):
            what = "an object" if kind is Mapping else "a list"
            raise job.error(f"{field}.metadata.{key}", f"is not {what}")
    return json_deepcopy(spec)


def _list_of_objects(job: JobRef, value: Any, field: str) -> None:
    """The builder merges into these lists by key: anything else is the spec's error,
    named, not a crash of the reconcile (found by fuzzing)."""
    if value is None:
        return
    if not isinstance(value, list):
        raise job.error(field, "is not a list")
    for i, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise job.error(f"{field}[{i}]", "is not an object")


def build_worker_pod(
    job: Mapping[str, Any],
    template: Mapping[str, Any],
    param: WorkerParam,
    *,
    get_secret: SecretGetter,
    image: str,
    mode: CredentialInjection,
    field: str = "spec.template",
) -> dict[str, Any]:
    """The pod Sedna's ``CreatePodWithTemplate`` would send, as a dict.

    Metadata takes only labels, annotations and finalizers from the template
    (``GetPodFromTemplate``); the env order in every container is: the
    template's, ``DATA_PATH_PREFIX``, worker credentials, then
    ``param.env``, the mount env vars and the hot-update env vars.
    """
    ref = job_ref(job)
    spec = template_spec(ref, template, field)
    tmeta = template.get("metadata") or {}

    plan = plan_storage(ref, param.mounts, get_secret, mode, field_prefix=f"{field}.")
    apply_storage(spec, plan, image)

    env = dict(param.env)
    env.update(plan.env)
    if param.worker_type.lower() == INFERENCE_POD_TYPE and param.model_hot_update.enable:
        volume, mount = hot_update_volume(ref)
        inject_by_key(list_field(spec, "volumes"), [volume], "name")
        for c in spec["containers"]:
            inject_by_key(list_field(c, "volumeMounts"), [mount], "mountPath")
        env.update(hot_update_env(param.model_hot_update))
    envs = env_list(env)
    if envs:
        for c in spec["containers"]:
            inject_by_key(list_field(c, "env"), envs, "name")

    labels = {str(k): str(v) for k, v in (tmeta.get("labels") or {}).items()}
    labels.update(generate_labels(ref, param.worker_type))
    metadata: dict[str, Any] = {
        "generateName": f"{ref.name}-{param.worker_type.lower()}-",
        "namespace": ref.namespace,
        "labels": labels,
        "ownerReferences": [controller_owner_reference(ref)],
    }
    if tmeta.get("annotations"):
        metadata["annotations"] = json_deepcopy(tmeta["annotations"])
    if tmeta.get("finalizers"):
        metadata["finalizers"] = list(tmeta["finalizers"])

    if param.host_network:
        spec["hostNetwork"] = True
    if not spec.get("restartPolicy") and param.restart_policy:
        spec["restartPolicy"] = param.restart_policy
    if param.dns_policy:
        spec["dnsPolicy"] = param.dns_policy
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
