"""``WorkerRuntime``: what feature controllers call to create worker objects.

It binds the API client, the storage-initializer image, the credential
mode and the pod adjusters (where the plugin hook ``sedna_adjust_pod`` is
plugged), so a feature controller only says *which* worker it wants.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from loguru import logger

from sedna.runtime.kube import DEPLOYMENTS, HPAS, NODES, PODS, SECRETS, SERVICES, KubeClient
from sedna.runtime.kube import NotFound as KubeNotFound
from sedna.runtime.kube.jsoncopy import json_deepcopy
from sedna.runtime.workers.credentials import CredentialInjection
from sedna.runtime.workers.deployments import build_deployment, inject_deployment_param
from sedna.runtime.workers.helpers import node_ip
from sedna.runtime.workers.hpa import apply_hpa_spec, build_hpa, hpa_name
from sedna.runtime.workers.labels import job_ref
from sedna.runtime.workers.pods import build_worker_pod
from sedna.runtime.workers.services import build_edgemesh_service, build_nodeport_service
from sedna.runtime.workers.storage import DEFAULT_STORAGE_INITIALIZER_IMAGE, SecretGetter
from sedna.runtime.workers.types import WorkerParam

__all__ = ["PodAdjuster", "WorkerRuntime"]

PodAdjuster = Callable[[dict[str, Any], Mapping[str, Any], str], None]
"""``adjust(pod, job, worker_type)``: may change the pod in place just before it is created."""


class WorkerRuntime:
    """Creates worker pods, deployments, services and HPAs for Sedna jobs."""

    def __init__(
        self,
        client: KubeClient,
        *,
        storage_initializer_image: str = DEFAULT_STORAGE_INITIALIZER_IMAGE,
        credential_injection: CredentialInjection = "secretKeyRef",
        pod_adjusters: Sequence[PodAdjuster] = (),
    ) -> None:
        if credential_injection not in ("secretKeyRef", "env"):
            raise ValueError(f"unknown credential_injection {credential_injection!r}")
        self.client = client
        self.storage_initializer_image = storage_initializer_image
        self.credential_injection: CredentialInjection = credential_injection
        self.pod_adjusters: tuple[PodAdjuster, ...] = tuple(pod_adjusters)

    # -- secrets -----------------------------------------------------------

    def _secret_getter(self, namespace: str) -> SecretGetter:
        # one read per secret and build, however many URLs name it
        cache: dict[str, Mapping[str, Any] | None] = {}
        secrets = self.client.resource(SECRETS)

        def get(name: str) -> Mapping[str, Any] | None:
            if name not in cache:
                try:
                    cache[name] = secrets.get(namespace, name)
                except KubeNotFound:
                    cache[name] = None
            return cache[name]

        return get

    # -- pods --------------------------------------------------------------

    def build_pod(
        self,
        job: Mapping[str, Any],
        template: Mapping[str, Any],
        param: WorkerParam,
        *,
        field: str = "spec.template",
    ) -> dict[str, Any]:
        """The worker pod for ``job`` from ``template`` (a PodTemplateSpec), not yet created.

        ``field`` is where the template lives in the job (for errors), e.g.
        ``spec.trainSpec.template``. Raises :class:`WorkerError`.
        """
        ref = job_ref(job)
        return build_worker_pod(
            job,
            template,
            param,
            get_secret=self._secret_getter(ref.namespace),
            image=self.storage_initializer_image,
            mode=self.credential_injection,
            field=field,
        )

    def create_pod_with_template(
        self,
        job: Mapping[str, Any],
        template: Mapping[str, Any],
        param: WorkerParam,
        *,
        field: str = "spec.template",
    ) -> dict[str, Any]:
        """Build the pod, run the pod adjusters, create it; returns the created pod.

        Adjusters get the lowercased worker type, the form of the label.
        """
        pod = self.build_pod(job, template, param, field=field)
        worker_type = param.worker_type.lower()
        for adjust in self.pod_adjusters:
            adjust(pod, job, worker_type)
        ns = pod["metadata"]["namespace"]
        created = self.client.resource(PODS).create(ns, pod)
        logger.debug(
            "pod {} (type={}) created for {} {}/{}",
            created.get("metadata", {}).get("name"),
            worker_type,
            job.get("kind"),
            ns,
            job.get("metadata", {}).get("name"),
        )
        return created

    # -- deployments -------------------------------------------------------

    def build_deployment(
        self,
        job: Mapping[str, Any],
        deployment_spec: Mapping[str, Any],
        param: WorkerParam,
        *,
        field: str = "spec.template",
    ) -> dict[str, Any]:
        """The deployment ``<job>-deployment-<type>`` from a DeploymentSpec (replicas, template)."""
        ref = job_ref(job)
        deployment = build_deployment(ref, deployment_spec)
        inject_deployment_param(
            deployment,
            ref,
            param,
            get_secret=self._secret_getter(ref.namespace),
            image=self.storage_initializer_image,
            mode=self.credential_injection,
            field=field,
        )
        return deployment

    def create_deployment_with_template(
        self,
        job: Mapping[str, Any],
        deployment_spec: Mapping[str, Any],
        param: WorkerParam,
        *,
        field: str = "spec.template",
    ) -> dict[str, Any]:
        """Create the worker deployment; returns the created object."""
        deployment = self.build_deployment(job, deployment_spec, param, field=field)
        ns = deployment["metadata"]["namespace"]
        return self.client.resource(DEPLOYMENTS).create(ns, deployment)

    def update_deployment_with_template(
        self,
        job: Mapping[str, Any],
        deployment: Mapping[str, Any],
        param: WorkerParam,
        *,
        field: str = "spec.template",
    ) -> dict[str, Any]:
        """Re-inject ``param`` into (a copy of) an existing deployment and replace it.

        Pass the existing object with its new template; its resourceVersion
        makes the write a compare-and-swap.
        """
        ref = job_ref(job)
        new = json_deepcopy(deployment)
        inject_deployment_param(
            new,
            ref,
            param,
            get_secret=self._secret_getter(ref.namespace),
            image=self.storage_initializer_image,
            mode=self.credential_injection,
            field=field,
        )
        meta = new["metadata"]
        ns = meta.get("namespace") or ref.namespace
        return self.client.resource(DEPLOYMENTS).replace(ns, meta["name"], new)

    # -- services ----------------------------------------------------------

    def create_nodeport_service(
        self, job: Mapping[str, Any], worker_type: str, port: int, ip: str
    ) -> int:
        """Sedna's ``CreateKubernetesService``: returns the allocated node port (0 if none)."""
        ref = job_ref(job)
        created = self.client.resource(SERVICES).create(
            ref.namespace, build_nodeport_service(ref, worker_type, port, ip)
        )
        ports = (created.get("spec") or {}).get("ports") or [{}]
        return int(ports[0].get("nodePort") or 0)

    def create_edgemesh_service(self, job: Mapping[str, Any], worker_type: str, port: int) -> str:
        """Sedna's ``CreateEdgeMeshService``: returns ``<service>.<namespace>`` for workers."""
        ref = job_ref(job)
        created = self.client.resource(SERVICES).create(
            ref.namespace, build_edgemesh_service(ref, worker_type, port)
        )
        meta = created["metadata"]
        return f"{meta['name']}.{meta['namespace']}"

    # -- HPAs --------------------------------------------------------------

    def create_hpa(
        self,
        job: Mapping[str, Any],
        kind: str,
        scale_target_name: str,
        worker_type: str,
        hpa: Mapping[str, Any],
    ) -> dict[str, Any]:
        """Create ``hpa-<target>`` from Sedna's HPA fields (min/max replicas, metrics, behavior)."""
        ref = job_ref(job)
        return self.client.resource(HPAS).create(
            ref.namespace, build_hpa(ref, kind, scale_target_name, worker_type, hpa)
        )

    def update_hpa(
        self,
        job: Mapping[str, Any],
        kind: str,
        scale_target_name: str,
        worker_type: str,
        hpa: Mapping[str, Any],
    ) -> dict[str, Any]:
        """Update ``hpa-<target>``, creating it when it does not exist (as Sedna does)."""
        ref = job_ref(job)
        hpas = self.client.resource(HPAS)
        name = hpa_name(scale_target_name)
        try:
            existing = hpas.get(ref.namespace, name)
        except KubeNotFound:
            return self.create_hpa(job, kind, scale_target_name, worker_type, hpa)
        apply_hpa_spec(existing, ref, kind, scale_target_name, worker_type, hpa)
        return hpas.replace(ref.namespace, name, existing)

    def delete_hpa(self, namespace: str, name: str) -> None:
        """Delete an HPA; one that is already gone is fine."""
        with contextlib.suppress(KubeNotFound):
            self.client.resource(HPAS).delete(namespace, name)

    # -- nodes -------------------------------------------------------------

    def node_ip_by_name(self, name: str) -> str:
        """ExternalIP, else InternalIP, of node ``name``; ``LookupError`` when it has none.

        A missing node raises the client's ``NotFound``.
        """
        ip = node_ip(self.client.resource(NODES).get(None, name))
        if ip is None:
            raise LookupError(f"node {name} has no ExternalIP or InternalIP address")
        return ip
