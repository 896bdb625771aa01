"""Owner identity, worker labels, selectors and controller owner references.

The label keys ``<kind lower>.<group>/name|uid|worker-type`` are how the
Go GM, the LC and existing clusters find a job's workers; a GM that takes
over from the Go GM must select the very same pods, so the rule is Sedna's
``generateLabels`` to the byte.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sedna.runtime.workers.errors import WorkerError

__all__ = [
    "JobRef",
    "controller_owner_reference",
    "generate_labels",
    "job_ref",
    "job_selector",
    "label_selector_string",
    "worker_selector",
]


@dataclass(frozen=True)
class JobRef:
    """What the runtime needs of the owning object (job or service)."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str

    @property
    def group(self) -> str:
        """API group; empty for core objects (``v1``)."""
        return self.api_version.rpartition("/")[0]

    @property
    def key(self) -> str:
        """``namespace/name``, the form errors and logs use."""
        return f"{self.namespace}/{self.name}"

    def error(self, field: str, message: str) -> WorkerError:
        """A :class:`WorkerError` about this object."""
        return WorkerError(self.key, field, message, kind=self.kind)


def job_ref(job: Mapping[str, Any]) -> JobRef:
    """Read the identity of ``job``; it must carry apiVersion and kind.

    Objects from list responses lack both; the Go controllers set the GVK
    by hand before calling the runtime, and so must ours, because labels
    and owner references are derived from them.
    """
    meta = job.get("metadata") or {}
    ref = JobRef(
        api_version=str(job.get("apiVersion") or ""),
        kind=str(job.get("kind") or ""),
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        uid=str(meta.get("uid") or ""),
    )
    for fld, value in (
        ("apiVersion", ref.api_version),
        ("kind", ref.kind),
        ("metadata.name", ref.name),
        ("metadata.namespace", ref.namespace),
        ("metadata.uid", ref.uid),
    ):
        if not value:
            raise ref.error(fld, "required to build workers (labels, owner reference)")
    return ref


def generate_labels(job: JobRef, worker_type: str = "") -> dict[str, str]:
    """Sedna's worker labels; ``worker-type`` only when a type is given, lowercased."""
    prefix = f"{job.kind}.{job.group}/".lower()
    labels = {prefix + "name": job.name, prefix + "uid": job.uid}
    if worker_type:
        labels[prefix + "worker-type"] = worker_type.lower()
    return labels


def job_selector(job: Mapping[str, Any]) -> dict[str, str]:
    """Match labels of all workers of ``job`` (Sedna's ``GenerateSelector``)."""
    return generate_labels(job_ref(job))


def worker_selector(job: Mapping[str, Any], worker_type: str) -> dict[str, str]:
    """Match labels of the workers of one type (Sedna's ``GenerateWorkerSelector``)."""
    return generate_labels(job_ref(job), worker_type)


def label_selector_string(match_labels: Mapping[str, str]) -> str:
    """The ``labelSelector`` query form, keys sorted like apimachinery's ``String()``."""
    return ",".join(f"{k}={match_labels[k]}" for k in sorted(match_labels))


def controller_owner_reference(job: JobRef) -> dict[str, Any]:
    """A controller reference as ``metav1.NewControllerRef`` makes it.

    ``blockOwnerDeletion`` makes foreground deletion of the job wait for its
    workers; ``controller`` lets listers map a worker back to its job.
    """
    return {
        "apiVersion": job.api_version,
        "kind": job.kind,
        "name": job.name,
        "uid": job.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
