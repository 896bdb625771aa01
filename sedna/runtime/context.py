"""What a feature controller receives: the runtime's services, already built."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sedna.runtime.clock import Clock
    from sedna.runtime.config import GMConfig
    from sedna.runtime.events import EventRecorder
    from sedna.runtime.informers import SharedInformerFactory
    from sedna.runtime.kube import KubeClient
    from sedna.runtime.metrics import Metrics
    from sedna.runtime.upstream import UpstreamRegistry
    from sedna.runtime.workers import WorkerRuntime

DownstreamSend = Callable[[str, str, Mapping[str, Any]], None]
"""send(node_name, event, obj): deliver an object to the LC of a node (insert/update/delete).

`obj` may share nested parts with the informer caches: a transport must serialize or
copy it, never change it.
"""


@dataclass(frozen=True)
class ControllerContext:
    """Built by the manager from the runtime container, one per feature.

    Everything here is shared with the other features except `feature_name`,
    `options` and `workers`.
    """

    config: GMConfig
    kube: KubeClient
    informers: SharedInformerFactory
    send: DownstreamSend
    upstream: UpstreamRegistry
    events: EventRecorder
    metrics: Metrics
    worker_runtime: WorkerRuntime
    clock: Clock
    feature_name: str = ""
    options: Any = field(default=None)
    workers: int = 1
