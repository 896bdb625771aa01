"""Deployments for service-style workers (Sedna's ``CreateDeploymentWithTemplate``).

Same labels, env and storage injection as pods, plus the ``app.sedna.io``
label that EdgeMesh uses to map a service to its pods. Unlike Go we inject
idempotently, so updating an existing deployment with the same parameters
does not add a second init container or duplicate env vars.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sedna.runtime.kube.jsoncopy import json_deepcopy
from sedna.runtime.workers.credentials import CredentialInjection
from sedna.runtime.workers.env import dict_field, env_list, inject_by_key, list_field
from sedna.runtime.workers.labels import JobRef, controller_owner_reference, generate_labels
from sedna.runtime.workers.pods import template_spec
from sedna.runtime.workers.storage import SecretGetter, apply_storage, plan_storage
from sedna.runtime.workers.types import WorkerParam

__all__ = ["APP_LABEL_KEY", "build_deployment", "deployment_name", "inject_deployment_param"]

APP_LABEL_KEY = "app.sedna.io"


def deployment_name(job: JobRef, worker_type: str) -> str:
    """``<job>-deployment-<worker type lowercased>``."""
    return f"{job.name}-deployment-{worker_type.lower()}"


def build_deployment(job: JobRef, spec: Mapping[str, Any]) -> dict[str, Any]:
    """Sedna's ``newDeployment`` before injection: replicas and template from ``spec``."""
    out_spec: dict[str, Any] = {
        "template": json_deepcopy(spec.get("template") or {}),
        "selector": {"matchLabels": {}},
    }
    if spec.get("replicas") is not None:
        out_spec["replicas"] = spec["replicas"]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "",  # filled by inject_deployment_param
            "namespace": job.namespace,
            "ownerReferences": [controller_owner_reference(job)],
        },
        "spec": out_spec,
    }


def inject_deployment_param(
    deployment: dict[str, Any],
    job: JobRef,
    param: WorkerParam,
    *,
    get_secret: SecretGetter,
    image: str,
    mode: CredentialInjection,
    field: str = "spec.template",
) -> None:
    """Sedna's ``injectDeploymentParam``, in place; storage first, then labels, then env.

    The ``app.sedna.io`` value keeps the worker type's case, as Go does.
    """
    meta = dict_field(deployment, "metadata")
    if not meta.get("name"):
        meta["name"] = deployment_name(job, param.worker_type)
    dspec = dict_field(deployment, "spec")
    template = dict_field(dspec, "template")
    spec = template_spec(job, template, field)

    plan = plan_storage(job, param.mounts, get_secret, mode, field_prefix=f"{field}.")
    if param.mounts:
        apply_storage(spec, plan, image)

    labels = generate_labels(job, param.worker_type)
    labels[APP_LABEL_KEY] = f"{job.name}-{param.worker_type}-svc"
    selector = dspec.get("selector") or {}
    dspec["selector"] = selector
    for target in (
        dict_field(meta, "labels"),
        dict_field(dict_field(template, "metadata"), "labels"),
        dict_field(selector, "matchLabels"),
    ):
        target.update(labels)

    env = dict(param.env)
    env.update(plan.env)
    envs = env_list(env)
    if envs:
        for c in spec["containers"]:
            inject_by_key(list_field(c, "env"), envs, "name")
    template["spec"] = spec
