"""A Deployment controller stand-in for embedded mode, speaking only the Kubernetes API.

Embedded mode has no kube-controller-manager, yet the GM's serving features must see
their Deployments behave as in a cluster. This controller gives each Deployment its
pods and its status, through the API like the simulated kubelet:

- pods named ``<deployment>-<pod-template-hash>-<5 chars>``, controlled by the
  Deployment (owner reference, ``blockOwnerDeletion``), labelled with the template's
  labels and ``pod-template-hash``; ``spec.replicas`` of them (default 1);
- a template change creates the new pods first and deletes the old ones once every new
  pod is Ready (a surge rollout, like ``maxSurge: 100%``);
- a Failed pod is deleted and replaced; scaling down deletes the surplus;
- ``status``: observedGeneration, replicas, updatedReplicas, readyReplicas,
  availableReplicas, unavailableReplicas and the ``Available`` and ``Progressing``
  conditions as the Deployment controller writes them, ``ProgressDeadlineExceeded``
  after ``spec.progressDeadlineSeconds`` (600) without progress, ``ReplicaFailure``
  when the server refuses a pod.

Differences from a cluster, on purpose: there is no ReplicaSet in between (pods are
owned by the Deployment itself), and the last 5 characters of a pod's name come from
the Deployment, the template and the pod's slot instead of a random source, so that
a restart of this controller at any point never creates a second pod for one slot.
Deleting a Deployment deletes its pods through the API server's garbage collector.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from loguru import logger

from sedna.runtime.clock import Clock, RealClock
from sedna.runtime.controller import Controller, Result
from sedna.runtime.informers import (
    DeletedFinalStateUnknown,
    ResourceEventHandlerFuncs,
    SharedInformerFactory,
    meta_namespace_key,
    split_key,
)
from sedna.runtime.kube import (
    DEPLOYMENTS,
    PODS,
    AlreadyExists,
    ApiError,
    KubeClient,
    NotFound,
    update_status_with_retry,
)
from sedna.runtime.kube.jsoncopy import json_deepcopy

__all__ = ["DeploymentController", "pod_template_hash"]

HASH_LABEL = "pod-template-hash"
DEFAULT_PROGRESS_DEADLINE = 600
_SAFE = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's SafeEncodeString alphabet

Obj = Mapping[str, Any]


def _safe(digest: bytes, n: int) -> str:
    return "".join(_SAFE[b % len(_SAFE)] for b in digest[:n])


def pod_template_hash(template: Obj) -> str:
    """A stable 10-character hash of a pod template (the ReplicaSet name suffix)."""
    import orjson

    raw = orjson.dumps(template, option=orjson.OPT_SORT_KEYS)
    return _safe(hashlib.sha256(raw).digest(), 10)


def _pod_name(dep_name: str, dep_uid: str, thash: str, slot: int) -> str:
    digest = hashlib.sha256(f"{dep_uid}/{thash}/{slot}".encode()).digest()
    return f"{dep_name}-{thash}-{_safe(digest, 5)}"


def _timestamp(clock: Clock) -> str:
    return datetime.fromtimestamp(clock.wall().timestamp(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_ts(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def _is_ready(pod: Obj) -> bool:
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return False
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
        if isinstance(c, Mapping)
    )


def _terminated(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _deployment_of(pod: Obj) -> str | None:
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if (
            isinstance(ref, Mapping)
            and ref.get("controller") is True
            and ref.get("kind") == "Deployment"
            and str(ref.get("apiVersion") or "").startswith("apps/")
        ):
            ns = (pod.get("metadata") or {}).get("namespace") or ""
            return f"{ns}/{ref.get('name')}"
    return None


class DeploymentController(Controller):
    """Pods and status for every Deployment in `namespace` ("" for all)."""

    def __init__(
        self,
        kube: KubeClient,
        *,
        namespace: str = "",
        clock: Clock | None = None,
        workers: int = 1,
    ) -> None:
        self.clock_: Clock = clock or RealClock()
        super().__init__("embedded-deployments", workers=workers, clock=self.clock_)
        self.kube = kube
        self.factory = SharedInformerFactory(
            kube, namespace=namespace, min_resync_period=0, clock=self.clock_
        )
        self.deployments = self.factory.informer(DEPLOYMENTS)
        self.pods = self.factory.informer(PODS)
        self.deployments_api = kube.resource(DEPLOYMENTS)
        self.pods_api = kube.resource(PODS)
        self.deployments.add_event_handler(
            ResourceEventHandlerFuncs(
                add=self._deployment_event,
                update=lambda _old, new: self._deployment_event(new),
                delete=self._deployment_event,
            )
        )
        self.pods.add_event_handler(
            ResourceEventHandlerFuncs(
                add=self._pod_event,
                update=lambda _old, new: self._pod_event(new),
                delete=self._pod_event,
            )
        )
        self._failures: dict[str, str] = {}  # key -> last pod creation refusal

    # -- lifecycle -------------------------------------------------------------------

    def start(self, timeout: float = 10.0) -> None:
        self.factory.start()
        if not self.factory.wait_for_cache_sync(timeout):
            raise RuntimeError("embedded deployments: caches did not sync")
        self.run()
        logger.info("embedded: deployment controller started")

    def stop(self, drain: bool = False, timeout: float | None = 5.0) -> None:
        super().stop(drain=drain, timeout=timeout)
        self.factory.stop(timeout)

    # -- events ----------------------------------------------------------------------

    def _deployment_event(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            self.enqueue(obj.key)
        else:
            self.enqueue(meta_namespace_key(obj))

    def _pod_event(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        key = _deployment_of(pod)
        if key is not None:
            self.enqueue(key)

    # -- the sync --------------------------------------------------------------------

    def sync(self, key: str) -> Result | None:
        ns, name = split_key(key)
        dep = self.deployments.lister.get(ns, name)
        if dep is None:
            self._failures.pop(key, None)
            return None
        meta = dep.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            return None
        spec = dep.get("spec") or {}
        replicas = spec.get("replicas")
        desired = replicas if isinstance(replicas, int) and replicas >= 0 else 1
        template = spec.get("template") or {}
        thash = pod_template_hash(template)
        uid = str(meta.get("uid") or "")
        live = [
            p
            for p in self.pods.lister.by_owner_uid(uid)
            if not (p.get("metadata") or {}).get("deletionTimestamp")
        ]
        for p in live:
            if (p.get("status") or {}).get("phase") == "Failed":
                self._delete(p, "failed")
        live = [p for p in live if not _terminated(p)]
        current = [p for p in live if _labels(p).get(HASH_LABEL) == thash]
        old = [p for p in live if _labels(p).get(HASH_LABEL) != thash]

        wanted = {_pod_name(name, uid, thash, i) for i in range(desired)}
        have = {str(p["metadata"]["name"]) for p in current}
        missing = sorted(wanted - have)
        if missing and not self._still_there(ns, name, uid):
            return None  # a stale cache: the delete event is on its way
        for pod_name in missing:
            self._create(key, dep, template, thash, pod_name)
        for p in current:
            if p["metadata"]["name"] not in wanted:
                self._delete(p, "scaled down")
        ready_current = [p for p in current if p["metadata"]["name"] in wanted and _is_ready(p)]
        if old and len(ready_current) >= desired:
            for p in old:
                self._delete(p, "replaced by the new template")
            old = []
        return self._write_status(dep, desired, thash, current, old, ready_current)

    def _still_there(self, ns: str, name: str, uid: str) -> bool:
        """Whether the server still has this Deployment (not one deleted or recreated since).

        The API server accepts a pod whose owner is gone, so creating from a stale cache
        would leave an orphan next to the new Deployment's pods.
        """
        try:
            fresh = self.deployments_api.get(ns, name)
        except NotFound:
            return False
        meta = fresh.get("metadata") or {}
        return meta.get("uid") == uid and not meta.get("deletionTimestamp")

    def _create(self, key: str, dep: Obj, template: Obj, thash: str, pod_name: str) -> None:
        meta = dep["metadata"]
        tmeta = template.get("metadata") or {}
        labels = {str(k): str(v) for k, v in (tmeta.get("labels") or {}).items()}
        labels[HASH_LABEL] = thash
        pod_meta: dict[str, Any] = {
            "name": pod_name,
            "namespace": meta.get("namespace"),
            "labels": labels,
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        }
        if tmeta.get("annotations"):
            pod_meta["annotations"] = json_deepcopy(tmeta["annotations"])
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": pod_meta,
            "spec": json_deepcopy(template.get("spec") or {}),
        }
        try:
            self.pods_api.create(meta.get("namespace"), body)
        except AlreadyExists:
            return  # a create whose answer was lost, or a pod still terminating
        except ApiError as exc:
            self._failures[key] = f'pods "{pod_name}" is forbidden: {exc.reason or exc}'
            logger.warning("embedded deployments: {}: cannot create pod {}: {}", key, pod_name, exc)
            return
        self._failures.pop(key, None)
        logger.debug("embedded deployments: {}: created pod {}", key, pod_name)

    def _delete(self, pod: Obj, why: str) -> None:
        meta = pod["metadata"]
        try:
            self.pods_api.delete(meta.get("namespace"), meta["name"])
        except NotFound:
            return
        logger.debug(
            "embedded deployments: deleted pod {}/{} ({})", meta.get("namespace"), meta["name"], why
        )

    # -- status ----------------------------------------------------------------------

    def _write_status(
        self,
        dep: Obj,
        desired: int,
        thash: str,
        current: list[Obj],
        old: list[Obj],
        ready_current: list[Obj],
    ) -> Result | None:
        meta = dep["metadata"]
        key = f"{meta.get('namespace')}/{meta['name']}"
        now = _timestamp(self.clock_)
        ready_all = [p for p in current + old if _is_ready(p)]
        available = len(ready_all)
        max_unavailable = desired // 4  # the default maxUnavailable, 25% rounded down
        rs_name = f"{meta['name']}-{thash}"
        complete = len(ready_current) >= desired and len(current) == desired and not old
        deadline = (dep.get("spec") or {}).get("progressDeadlineSeconds")
        deadline = deadline if isinstance(deadline, int) else DEFAULT_PROGRESS_DEADLINE
        failure = self._failures.get(key)
        requeue: float | None = None

        def mutate(fresh: dict[str, Any]) -> bool:
            nonlocal requeue
            status = dict(fresh.get("status") or {})
            before = json_deepcopy(status)
            conds = {
                c["type"]: dict(c)
                for c in status.get("conditions") or []
                if isinstance(c, Mapping) and "type" in c
            }
            status["observedGeneration"] = fresh["metadata"].get("generation", 1)
            status["replicas"] = len(current) + len(old)
            status["updatedReplicas"] = len(current)
            status["readyReplicas"] = available
            status["availableReplicas"] = available
            status["unavailableReplicas"] = max(desired - available, 0)
            for k in ("readyReplicas", "availableReplicas", "unavailableReplicas", "replicas"):
                if status[k] == 0:
                    status.pop(k)  # omitempty, as the server sends them
            ok = available >= desired - max_unavailable
            _set_cond(
                conds,
                "Available",
                "True" if ok else "False",
                "MinimumReplicasAvailable" if ok else "MinimumReplicasUnavailable",
                "Deployment has minimum availability."
                if ok
                else "Deployment does not have minimum availability.",
                now,
            )
            prog = conds.get("Progressing")
            if complete:
                _set_cond(
                    conds,
                    "Progressing",
                    "True",
                    "NewReplicaSetAvailable",
                    f'ReplicaSet "{rs_name}" has successfully progressed.',
                    now,
                )
            elif (
                prog is not None
                and prog.get("reason") == "ProgressDeadlineExceeded"
                and (prog.get("message") or "").startswith(f'ReplicaSet "{rs_name}"')
            ):
                pass  # stays failed until the template changes or the rollout completes
            else:
                progress_msg = f'ReplicaSet "{rs_name}" is progressing.'
                if (
                    prog is None
                    or prog.get("message") != progress_msg
                    or prog.get("status") != "True"
                ):
                    _set_cond(conds, "Progressing", "True", "ReplicaSetUpdated", progress_msg, now)
                    prog = conds["Progressing"]
                since = _parse_ts(prog.get("lastUpdateTime")) or self.clock_.wall().timestamp()
                left = since + deadline - self.clock_.wall().timestamp()
                if left <= 0:
                    _set_cond(
                        conds,
                        "Progressing",
                        "False",
                        "ProgressDeadlineExceeded",
                        f'ReplicaSet "{rs_name}" has timed out progressing.',
                        now,
                    )
                else:
                    requeue = left + 1
            if failure:
                _set_cond(conds, "ReplicaFailure", "True", "FailedCreate", failure, now)
            else:
                conds.pop("ReplicaFailure", None)
            order = ("Available", "Progressing", "ReplicaFailure")
            status["conditions"] = [conds[t] for t in order if t in conds]
            if status == before:
                return False
            fresh["status"] = status
            return True

        try:
            update_status_with_retry(
                self.deployments_api, meta.get("namespace") or "", meta["name"], mutate, current=dep
            )
        except NotFound:
            return None
        return Result(requeue_after=requeue) if requeue else None


def _labels(obj: Obj) -> Mapping[str, Any]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _set_cond(
    conds: dict[str, dict[str, Any]],
    ctype: str,
    status: str,
    reason: str,
    message: str,
    now: str,
) -> None:
    """Deployment-condition semantics: lastUpdateTime on any change, transition on status."""
    old = conds.get(ctype)
    if old is not None and (old.get("status"), old.get("reason"), old.get("message")) == (
        status,
        reason,
        message,
    ):
        return
    transition = now if old is None or old.get("status") != status else old["lastTransitionTime"]
    conds[ctype] = {
        "type": ctype,
        "status": status,
        "lastUpdateTime": now,
        "lastTransitionTime": transition,
        "reason": reason,
        "message": message,
    }
