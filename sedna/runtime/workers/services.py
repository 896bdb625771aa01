"""Services in front of workers (Sedna's ``CreateKubernetesService``, ``CreateEdgeMeshService``)."""

from __future__ import annotations

from typing import Any

from sedna.runtime.workers.labels import JobRef, controller_owner_reference, generate_labels

__all__ = ["build_edgemesh_service", "build_nodeport_service", "service_name"]


def service_name(job: JobRef, worker_type: str) -> str:
    """``<job>-<worker type>``, lowercased as a whole."""
    return f"{job.name}-{worker_type}".lower()


def _service(job: JobRef, worker_type: str, spec: dict[str, Any]) -> dict[str, Any]:
    labels = generate_labels(job, worker_type)
    spec["selector"] = dict(labels)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": service_name(job, worker_type),
            "namespace": job.namespace,
            "ownerReferences": [controller_owner_reference(job)],
            "labels": labels,
        },
        "spec": spec,
    }


def build_nodeport_service(job: JobRef, worker_type: str, port: int, ip: str) -> dict[str, Any]:
    """A NodePort service with ``ip`` as external IP, port = target port."""
    return _service(
        job,
        worker_type,
        {
            "externalIPs": [ip],
            "type": "NodePort",
            "ports": [{"port": port, "targetPort": port}],
        },
    )


def build_edgemesh_service(job: JobRef, worker_type: str, port: int) -> dict[str, Any]:
    """A ClusterIP service EdgeMesh can route across edge and cloud.

    EdgeMesh (v1.8) requires the port name ``<protocol>-<suffix>``, hence ``tcp-0``.
    """
    return _service(
        job,
        worker_type,
        {"ports": [{"name": "tcp-0", "protocol": "TCP", "port": port, "targetPort": port}]},
    )
