"""The embeddable runtime core: the public API for feature plugins and embedders.

Names are resolved lazily (PEP 562) so importing one submodule does not import the
whole core; the static imports under TYPE_CHECKING are what mypy and readers see.
Everything not listed here is private.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    # plugin API
    "hookimpl": "sedna.runtime.plugin_api",
    "Feature": "sedna.runtime.plugin_api",
    "ApiAccess": "sedna.runtime.plugin_api",
    "FeatureController": "sedna.runtime.plugin_api",
    "FeatureOptionsError": "sedna.runtime.plugin_api",
    "ControllerContext": "sedna.runtime.context",
    "DownstreamSend": "sedna.runtime.context",
    "RuntimeContainer": "sedna.runtime.container",
    # config
    "GMConfig": "sedna.runtime.config",
    "ConfigError": "sedna.runtime.config",
    "load_config": "sedna.runtime.config",
    "WebsocketConfig": "sedna.runtime.config",
    # clock
    "Clock": "sedna.runtime.clock",
    "RealClock": "sedna.runtime.clock",
    "FakeClock": "sedna.runtime.clock",
    # kube access
    "Resource": "sedna.runtime.kube",
    "KubeClient": "sedna.runtime.kube",
    "ResourceClient": "sedna.runtime.kube",
    "ApiError": "sedna.runtime.kube",
    "NotFound": "sedna.runtime.kube",
    "Conflict": "sedna.runtime.kube",
    "AlreadyExists": "sedna.runtime.kube",
    "Gone": "sedna.runtime.kube",
    "update_status_with_retry": "sedna.runtime.kube",
    "api_client_from_config": "sedna.runtime.kube",
    "sedna_resource": "sedna.runtime.kube",
    "PODS": "sedna.runtime.kube",
    "SECRETS": "sedna.runtime.kube",
    "SERVICES": "sedna.runtime.kube",
    "EVENTS": "sedna.runtime.kube",
    "NODES": "sedna.runtime.kube",
    "NAMESPACES": "sedna.runtime.kube",
    "LEASES": "sedna.runtime.kube",
    "DEPLOYMENTS": "sedna.runtime.kube",
    "HPAS": "sedna.runtime.kube",
    "INCREMENTAL_LEARNING_JOBS": "sedna.runtime.kube",
    "MODELS": "sedna.runtime.kube",
    "DATASETS": "sedna.runtime.kube",
    # informers
    "SharedInformerFactory": "sedna.runtime.informers",
    "SharedInformer": "sedna.runtime.informers",
    "Lister": "sedna.runtime.informers",
    "ResourceEventHandlerFuncs": "sedna.runtime.informers",
    "DeletedFinalStateUnknown": "sedna.runtime.informers",
    "meta_namespace_key": "sedna.runtime.informers",
    "split_key": "sedna.runtime.informers",
    # workqueue and controllers
    "RateLimitingQueue": "sedna.runtime.workqueue",
    "ItemExponentialFailureRateLimiter": "sedna.runtime.workqueue",
    "Controller": "sedna.runtime.controller",
    "Result": "sedna.runtime.controller",
    # workers
    "WorkerRuntime": "sedna.runtime.workers",
    "WorkerParam": "sedna.runtime.workers",
    "WorkerMount": "sedna.runtime.workers",
    "MountURL": "sedna.runtime.workers",
    "ModelHotUpdate": "sedna.runtime.workers",
    "WorkerError": "sedna.runtime.workers",
    "generate_labels": "sedna.runtime.workers",
    "job_selector": "sedna.runtime.workers",
    "worker_selector": "sedna.runtime.workers",
    "label_selector_string": "sedna.runtime.workers",
    "controller_owner_reference": "sedna.runtime.workers",
    "model_hot_update_config_file": "sedna.runtime.workers",
    "MODEL_HOT_UPDATE_ANNOTATION_KEY": "sedna.runtime.workers",
    "backoff_for": "sedna.runtime.workers",
    "backoff_for_requeues": "sedna.runtime.workers",
    "TRAIN_POD_TYPE": "sedna.runtime.workers",
    "EVAL_POD_TYPE": "sedna.runtime.workers",
    "INFERENCE_POD_TYPE": "sedna.runtime.workers",
    "active_pod_count": "sedna.runtime.workers",
    "node_ip": "sedna.runtime.workers",
    "convert_map_to_metrics": "sedna.runtime.workers",
    "JobRef": "sedna.runtime.workers",
    "job_ref": "sedna.runtime.workers",
    # messaging
    "CREDENTIAL_ANNOTATION": "sedna.runtime.messaging",
    "attach_credential": "sedna.runtime.messaging",
    "UpstreamMessage": "sedna.runtime.upstream",
    "UpstreamRegistry": "sedna.runtime.upstream",
    "UpstreamHandler": "sedna.runtime.upstream",
    "StalenessHook": "sedna.runtime.upstream",
    # events, metrics
    "EventRecorder": "sedna.runtime.events",
    "LeaderElector": "sedna.runtime.leader",
    "Metrics": "sedna.runtime.metrics",
}

__all__ = [
    "CREDENTIAL_ANNOTATION",
    "DATASETS",
    "DEPLOYMENTS",
    "EVAL_POD_TYPE",
    "EVENTS",
    "HPAS",
    "INCREMENTAL_LEARNING_JOBS",
    "INFERENCE_POD_TYPE",
    "LEASES",
    "MODELS",
    "MODEL_HOT_UPDATE_ANNOTATION_KEY",
    "NAMESPACES",
    "NODES",
    "PODS",
    "SECRETS",
    "SERVICES",
    "TRAIN_POD_TYPE",
    "AlreadyExists",
    "ApiAccess",
    "ApiError",
    "Clock",
    "ConfigError",
    "Conflict",
    "Controller",
    "ControllerContext",
    "DeletedFinalStateUnknown",
    "DownstreamSend",
    "EventRecorder",
    "FakeClock",
    "Feature",
    "FeatureController",
    "FeatureOptionsError",
    "GMConfig",
    "Gone",
    "ItemExponentialFailureRateLimiter",
    "JobRef",
    "KubeClient",
    "LeaderElector",
    "Lister",
    "Metrics",
    "ModelHotUpdate",
    "MountURL",
    "NotFound",
    "RateLimitingQueue",
    "RealClock",
    "Resource",
    "ResourceClient",
    "ResourceEventHandlerFuncs",
    "Result",
    "RuntimeContainer",
    "SharedInformer",
    "SharedInformerFactory",
    "StalenessHook",
    "UpstreamHandler",
    "UpstreamMessage",
    "UpstreamRegistry",
    "WebsocketConfig",
    "WorkerError",
    "WorkerMount",
    "WorkerParam",
    "WorkerRuntime",
    "active_pod_count",
    "api_client_from_config",
    "attach_credential",
    "backoff_for",
    "backoff_for_requeues",
    "controller_owner_reference",
    "convert_map_to_metrics",
    "generate_labels",
    "hookimpl",
    "job_ref",
    "job_selector",
    "label_selector_string",
    "load_config",
    "meta_namespace_key",
    "model_hot_update_config_file",
    "node_ip",
    "sedna_resource",
    "split_key",
    "update_status_with_retry",
    "worker_selector",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sedna.runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from sedna.runtime.clock import Clock, FakeClock, RealClock
    from sedna.runtime.config import ConfigError, GMConfig, WebsocketConfig, load_config
    from sedna.runtime.container import RuntimeContainer
    from sedna.runtime.context import ControllerContext, DownstreamSend
    from sedna.runtime.controller import Controller, Result
    from sedna.runtime.events import EventRecorder
    from sedna.runtime.informers import (
        DeletedFinalStateUnknown,
        Lister,
        ResourceEventHandlerFuncs,
        SharedInformer,
        SharedInformerFactory,
        meta_namespace_key,
        split_key,
    )
    from sedna.runtime.kube import (
        DATASETS,
        DEPLOYMENTS,
        EVENTS,
        HPAS,
        INCREMENTAL_LEARNING_JOBS,
        LEASES,
        MODELS,
        NAMESPACES,
        NODES,
        PODS,
        SECRETS,
        SERVICES,
        AlreadyExists,
        ApiError,
        Conflict,
        Gone,
        KubeClient,
        NotFound,
        Resource,
        ResourceClient,
        api_client_from_config,
        sedna_resource,
        update_status_with_retry,
    )
    from sedna.runtime.leader import LeaderElector
    from sedna.runtime.messaging import CREDENTIAL_ANNOTATION, attach_credential
    from sedna.runtime.metrics import Metrics
    from sedna.runtime.plugin_api import (
        ApiAccess,
        Feature,
        FeatureController,
        FeatureOptionsError,
        hookimpl,
    )
    from sedna.runtime.upstream import (
        StalenessHook,
        UpstreamHandler,
        UpstreamMessage,
        UpstreamRegistry,
    )
    from sedna.runtime.workers import (
        EVAL_POD_TYPE,
        INFERENCE_POD_TYPE,
        MODEL_HOT_UPDATE_ANNOTATION_KEY,
        TRAIN_POD_TYPE,
        JobRef,
        ModelHotUpdate,
        MountURL,
        WorkerError,
        WorkerMount,
        WorkerParam,
        WorkerRuntime,
        active_pod_count,
        backoff_for,
        backoff_for_requeues,
        controller_owner_reference,
        convert_map_to_metrics,
        generate_labels,
        job_ref,
        job_selector,
        label_selector_string,
        model_hot_update_config_file,
        node_ip,
        worker_selector,
    )
    from sedna.runtime.workqueue import ItemExponentialFailureRateLimiter, RateLimitingQueue
