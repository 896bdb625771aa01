"""Typed equivalents of Sedna's ``WorkerParam``, ``WorkerMount``, ``MountURL``, ``ModelHotUpdate``.

Only the inputs are kept here. Go's ``MountURL`` also carries the results of
``Parse()`` (container path, host path, download pair, secret envs); ours are
computed into a separate :class:`~sedna.runtime.workers.storage.ResolvedURL`
so a parameter object can be reused for the next pod without surprises
(the Go runtime writes the mount env vars back into ``WorkerParam.Env``).

The Go ``MountURL.Secret`` is a secret object the controller fetched; here a
mount names its secret and the runtime reads it, so that a missing secret
becomes one clear :class:`WorkerError` naming ``secret_field``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = [
    "EVAL_POD_TYPE",
    "INFERENCE_POD_TYPE",
    "TRAIN_POD_TYPE",
    "ModelHotUpdate",
    "MountURL",
    "WorkerMount",
    "WorkerParam",
]

TRAIN_POD_TYPE = "train"
EVAL_POD_TYPE = "eval"
INFERENCE_POD_TYPE = "inference"


@dataclass(frozen=True)
class MountURL:
    """One dataset/model URL to make available to a worker.

    ``url``: ``s3://``, ``http(s)://`` or a host path of the worker's node.
    ``indirect``: the URL is an index file whose entries must all be
    downloaded (datasets with an index URL); may be a host path.
    ``download_by_initializer``: fetch it with the storage-initializer init
    container; when false (outputs) the worker reads/writes it itself.
    ``is_dir``: a host path that is a directory (mounted itself, not its parent).
    ``enable_if_host_path``: use it only when it is a host path, drop it otherwise.
    ``secret_name``: credential secret in the job's namespace (S3 access).
    ``secret_field``: the field that named the secret, for error messages.
    ``field``: the field the URL came from, for error messages.
    """

    url: str
    indirect: bool = False
    download_by_initializer: bool = False
    is_dir: bool = False
    enable_if_host_path: bool = False
    secret_name: str | None = None
    secret_field: str = "spec.credentialName"
    field: str | None = None


@dataclass(frozen=True)
class WorkerMount:
    """URLs exposed to the worker through one env var (paths joined by ``;``).

    As in Go, ``url`` (if set) comes after ``urls``.
    """

    name: str = ""
    url: MountURL | None = None
    urls: Sequence[MountURL] = ()
    env_name: str = ""

    def all_urls(self) -> list[MountURL]:
        """The URLs in Sedna's order: ``urls`` then ``url``."""
        out = list(self.urls)
        if self.url is not None:
            out.append(self.url)
        return out


@dataclass(frozen=True)
class ModelHotUpdate:
    """Whether the inference worker polls a config file for a new model, and how often."""

    enable: bool = False
    poll_period_seconds: int = 0


@dataclass
class WorkerParam:
    """System-defined parameters of one worker pod.

    ``env`` is applied after the template's env in insertion order (Go's map
    order is random, ours is the caller's). ``restart_policy`` only fills an
    unset template value; ``dns_policy`` overrides when non-empty, as in Go.
    The runtime never mutates a ``WorkerParam``.
    """

    worker_type: str
    mounts: list[WorkerMount] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    host_network: bool = False
    model_hot_update: ModelHotUpdate = field(default_factory=ModelHotUpdate)
    restart_policy: str = ""
    dns_policy: str = ""
