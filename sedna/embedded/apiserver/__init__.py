"""In-process Kubernetes API server for tests and the GM's embedded mode.

It speaks kube-apiserver's HTTP API (discovery, CRUD, watch, patches, status
subresource, garbage collection, CRDs) well enough for the official python client and
kubectl, so code tested against it runs unchanged against a real cluster.
"""

from __future__ import annotations

from .errors import APIError
from .faults import FaultInjector
from .requests import PROCESS_REQUESTS, ApiCall, RequestRecorder
from .server import APIServer

__all__ = [
    "PROCESS_REQUESTS",
    "APIError",
    "APIServer",
    "ApiCall",
    "FaultInjector",
    "RequestRecorder",
]
