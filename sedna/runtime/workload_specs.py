"""Spec pieces the multi-edge kinds share: checked templates, counts, service hosts, access.

`checked_template` is the family's `parse_template` plus `check_pod_template` (env
values that are not strings, container names the API server refuses), so a template
that a real API server would reject never reaches it and the owner's condition names
the field instead.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from sedna.runtime.informers import (
    DeletedFinalStateUnknown,
    ResourceEventHandlerFuncs,
    SharedInformer,
    meta_namespace_key,
)
from sedna.runtime.plugin_api import ApiAccess
from sedna.runtime.workers.labels import job_ref
from sedna.runtime.workers.template_check import check_pod_template
from sedna.runtime.workers.types import MountURL, WorkerMount
from sedna.runtime.workloads.parsing import parse_template
from sedna.runtime.workloads.wants import SpecError, Waiting

__all__ = [
    "REASON_MODEL_NOT_FOUND",
    "checked_template",
    "enqueue_on_model",
    "model_mount",
    "optional_bool",
    "optional_count",
    "service_host",
    "workload_access",
]

REASON_MODEL_NOT_FOUND = "ModelNotFound"


def checked_template(value: Any, field: str) -> Mapping[str, Any]:
    """A PodTemplateSpec that both the family's checks and `check_pod_template` accept."""
    template = parse_template(value, field)
    problem = check_pod_template(template, field)
    if problem is not None:
        raise SpecError(*problem)
    return template


def optional_count(value: Any, field: str, default: int | None = None) -> int | None:
    """A non-negative integer (``replicas``), or `default` when unset."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(field, f"expected an integer, got {value!r}")
    if value < 0:
        raise SpecError(field, f"must not be negative, got {value}")
    return value


def optional_bool(value: Any, field: str) -> bool:
    """A boolean flag (``kafkaSupport``); unset is false."""
    if value is None:
        return False
    if not isinstance(value, bool):
        raise SpecError(field, f"expected true or false, got {value!r}")
    return value


def service_host(owner: Mapping[str, Any], worker_type: str) -> str:
    """``<owner>-<worker type>.<namespace>``: what Sedna's ``CreateEdgeMeshService`` returns.

    Known before the Service exists, so the workers that call it can be planned in the
    same pass.
    """
    ref = job_ref(owner)
    return f"{ref.name}-{worker_type}".lower() + f".{ref.namespace}"


def workload_access(plural: str, *, models: bool = False) -> tuple[ApiAccess, ...]:
    """The API access of a workload-family feature whose owner resource is `plural`.

    The owner and its status (only PUT: the GET before a retry reads the owner itself),
    the objects the family and bare pods manage (including the HPA informer every family
    controller opens), Events, credential secrets, and with ``models`` the Models its
    workers load.
    """
    rules = [
        ApiAccess("sedna.io", (plural,), ("get", "list", "watch")),
        ApiAccess("sedna.io", (f"{plural}/status",), ("update",)),
        ApiAccess("", ("pods",), ("get", "list", "watch", "create", "delete")),
        ApiAccess("", ("services",), ("get", "list", "watch", "create", "update", "delete")),
        ApiAccess("apps", ("deployments",), ("get", "list", "watch", "create", "update", "delete")),
        ApiAccess(
            "autoscaling",
            ("horizontalpodautoscalers",),
            ("get", "list", "watch", "create", "update", "delete"),
        ),
        ApiAccess("", ("events",), ("create", "patch")),
        ApiAccess("", ("secrets",), ("get",)),
    ]
    if models:
        rules.append(ApiAccess("sedna.io", ("models",), ("get", "list", "watch")))
    return tuple(rules)


def model_mount(
    models: SharedInformer, owner: Mapping[str, Any], name: str, field: str, env_name: str
) -> WorkerMount:
    """The Model `name` of the owner's namespace as a mount the storage initializer fetches.

    Sedna's ``MODEL_URL`` mount of FeatureExtractionService and VideoAnalyticsJob; the
    model's ``spec.credentialName`` is its secret. A missing Model is `Waiting` (the
    owner is ``Pending``, reason ``ModelNotFound``), a Model without a URL a
    `SpecError` naming the Model's field. Sedna fails the service for good on both.
    """
    ns = job_ref(owner).namespace
    # a cache miss is read from the server: a Model applied with its service (one
    # `kubectl apply -f dir/`) may not be cached yet, and is no reason for a Warning
    model = models.get_or_read(ns, name)
    if model is None:
        raise Waiting(field, REASON_MODEL_NOT_FOUND, f"model {ns}/{name} not found")
    spec = model.get("spec") or {}
    url = spec.get("url")
    if not isinstance(url, str) or not url:
        raise SpecError(f"{field}: Model {name}: spec.url", "missing")
    secret = spec.get("credentialName")
    return WorkerMount(
        name="model",
        url=MountURL(
            url=url,
            secret_name=secret if isinstance(secret, str) and secret else None,
            secret_field=f"Model {name}: spec.credentialName",
            download_by_initializer=True,
            field=f"{field}: Model {name}: spec.url",
        ),
        env_name=env_name,
    )


def enqueue_on_model(
    models: SharedInformer,
    owners: SharedInformer,
    model_name_of: Callable[[Mapping[str, Any]], str | Collection[str] | None],
    enqueue: Callable[[str], None],
) -> None:
    """Enqueue every owner whose ``model_name_of(owner)`` names a Model that changed
    (one name, or several: joint inference's cloud and edge Models).

    So an owner waiting for its Model starts when the Model is created, and a new
    Model URL reaches its workers.
    """

    def changed(obj: Mapping[str, Any] | DeletedFinalStateUnknown) -> None:
        model = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        meta = model.get("metadata") or {}
        name = meta.get("name")
        for owner in owners.lister.list(str(meta.get("namespace") or "")):
            names = model_name_of(owner)
            if names == name if names is None or isinstance(names, str) else name in names:
                enqueue(meta_namespace_key(owner))

    models.add_event_handler(
        ResourceEventHandlerFuncs(add=changed, update=lambda _o, n: changed(n), delete=changed)
    )
