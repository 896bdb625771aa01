"""The GM at fleet size: foreign pods, bytes per cached object, startup.

Three parts, each at one tenth, one third and the whole of its size (``--fractions``),
every run against a fresh in-process API server in a child process, seeded inside that
process (the store's own create path: defaulting, uids, resourceVersions, one watch
event each; no HTTP, so seeding 50 000 objects takes seconds):

* ``foreign``: 30 000 pods no feature owns (a Deployment's, with a kubelet's status and
  managedFields), and 3 000 Deployments and 3 000 Services no feature owns
  (``--foreign-workloads``), in another namespace. The GM (IncrementalLearningJob, the
  workload family's features and FederatedLearningJob, all namespaces) is started with
  none and with all of them; reported: its RSS growth, the pods, Deployments and
  Services its caches hold, and the label selectors of those informers. Variant
  ``unscoped`` is the GM as it was before label-scoped informers (one informer of every
  pod, no transform; one of every Deployment, Service and HPA), for comparison.
* ``cache``: 10 000 IL jobs (Sedna's sample renamed, with status and managedFields) and
  their 10 000 inference pods (as the GM makes them, Running). RSS of a GM with
  nothing, with the pods only (owned by a ConfigMap), and with jobs and pods gives the
  bytes per cached pod and per cached job (``--unique-specs``: also with jobs whose
  specs all differ, so no subtree is shared). Downstream is a no-op here (no LC: the
  edge queues are not a cache); variant ``no-transform`` caches objects whole.
* ``startup``: 10 000 jobs, their 10 000 pods and 30 000 foreign pods. The GM process
  is spawned (a fresh interpreter) with /readyz on a known port; reported: seconds
  from spawn to /readyz 200, and to the first and the last job's first sync (each
  job's first reconcile, recorded in the GM process).

RSS is VmRSS after ``gc.collect()`` once the GM is idle (its CPU stopped moving).
kopf and the lean loop of ``bench_reconcile.py`` cache no pods and no jobs, so they
have no figure here.

The server and (in ``startup``) the GM run the heap settler (``sedna.heap``) as the
CLI does; ``BENCH_NO_SETTLE=1`` runs without it. ``BENCH_PROFILE=FILE`` writes a
cProfile of the GM's start (every thread) to FILE and of the server's loop thread while
the GM lists to FILE.server.

Run: ``python bench/bench_fleet.py [--parts foreign,cache,startup] [--fractions
0.1,0.333,1] [--jobs 10000] [--foreign 30000]``. Writes ``bench/results/fleet.json``.
"""

from __future__ import annotations

import argparse
import copy
import gc
import importlib.util
import json
import multiprocessing as mp
import os
import platform
import queue
import resource
import socket
import sys
import time
import urllib.error
import urllib.request
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results" / "fleet.json"
CRDS = ROOT / "config" / "crds"
SAMPLES = ROOT / "tests" / "fixtures" / "samples"  # the objects of Sedna's samples
JOBS_NS = "fleet"
FOREIGN_NS = "apps"
LABEL = "incrementallearningjob.sedna.io/"
NOW = "2026-12-01T12:00:00Z"


def _quiet_logs(level: str = "WARNING") -> None:
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level=level)


def _api_server(**kwargs: Any) -> Any:
    """The embedded API server as the other benches start it (HTTPS and a token where
    ``bench/embedded_server.py`` provides them)."""
    if importlib.util.find_spec("embedded_server") is not None:
        import embedded_server

        return embedded_server.server(**kwargs)
    from sedna.embedded.apiserver import APIServer

    return APIServer(**kwargs)


def _api_client(url: str) -> Any:
    """A client of that server (its token and CA where it has them)."""
    if importlib.util.find_spec("embedded_server") is not None:
        import embedded_server

        return embedded_server.client(url)
    from sedna.runtime.kube import api_client_for_url

    return api_client_for_url(url)


def _rss() -> int:
    gc.collect()
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def _sample(file: str) -> dict[str, Any]:
    from sedna.embedded.kube_yaml import load_all  # as kubectl reads it: `24:00` a string

    return dict(next(load_all((SAMPLES / file).read_text())))


# -- objects as a cluster holds them ----------------------------------------------------


def _managed(manager: str, op: str, api_version: str, fields: dict[str, Any]) -> dict[str, Any]:
    return {
        "manager": manager,
        "operation": op,
        "apiVersion": api_version,
        "time": NOW,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }


def _pod_status(node_ip: str, pod_ip: str, container: str, image: str) -> dict[str, Any]:
    conds = [
        {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": NOW}
        for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
    ]
    return {
        "phase": "Running",
        "conditions": conds,
        "hostIP": node_ip,
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": NOW,
        "qosClass": "BestEffort",
        "containerStatuses": [
            {
                "name": container,
                "state": {"running": {"startedAt": NOW}},
                "lastState": {},
                "ready": True,
                "restartCount": 0,
                "image": image,
                "imageID": f"docker-pullable://{image}@sha256:{uuid.uuid4().hex}{uuid.uuid4().hex}",
                "containerID": f"docker://{uuid.uuid4().hex}{uuid.uuid4().hex}",
                "started": True,
            }
        ],
    }


_STATUS_FIELDS = {
    "f:status": {
        "f:conditions": {".": {}, 'k:{"type":"Ready"}': {".": {}, "f:status": {}}},
        "f:containerStatuses": {},
        "f:hostIP": {},
        "f:phase": {},
        "f:podIP": {},
        "f:startTime": {},
    }
}


def _foreign_pod(i: int) -> dict[str, Any]:
    image = "nginx:1.25.3"
    return {
        "metadata": {
            "name": f"web-7d9c8b5f4-{i:06d}",
            "labels": {"app": "web", "pod-template-hash": "7d9c8b5f4", "tier": "frontend"},
            "annotations": {"kubernetes.io/psp": "restricted"},
            "managedFields": [
                _managed("kube-controller-manager", "Update", "v1", {"f:metadata": {}}),
                _managed("kubelet", "Update", "v1", _STATUS_FIELDS),
            ],
        },
        "spec": {
            "nodeName": f"node-{i % 500:04d}",
            "containers": [
                {
                    "name": "web",
                    "image": image,
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "env": [{"name": "MODE", "value": "production"}],
                    "resources": {},
                    "terminationMessagePath": "/dev/termination-log",
                    "imagePullPolicy": "IfNotPresent",
                }
            ],
            "restartPolicy": "Always",
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "schedulerName": "default-scheduler",
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
            ],
        },
        "status": _pod_status(
            f"10.0.{i % 250}.{i % 200 + 1}", f"10.244.{i % 250}.{i % 200}", "web", image
        ),
    }


def _job(i: int, template: dict[str, Any]) -> dict[str, Any]:
    job = copy.deepcopy(template)
    job["metadata"]["name"] = f"job-{i:05d}"
    job["metadata"]["managedFields"] = [
        _managed("kubectl-create", "Update", "sedna.io/v1alpha1", {"f:spec": {}}),
        _managed("sedna-gm", "Update", "sedna.io/v1alpha1", {"f:status": {}}),
    ]
    return job


def _job_status() -> dict[str, Any]:
    return {
        "startTime": NOW,
        "conditions": [
            {
                "type": "Waiting",
                "stage": "Train",
                "status": "True",
                "lastHeartbeatTime": NOW,
                "lastTransitionTime": NOW,
                "reason": "",
                "message": "",
            }
        ],
    }


def _inference_pod(job: dict[str, Any], owner: dict[str, Any]) -> dict[str, Any]:
    name = job["metadata"]["name"]
    spec = copy.deepcopy(job["spec"]["deploySpec"]["template"]["spec"])
    c = spec["containers"][0]
    c.setdefault("env", []).extend(
        {"name": k, "value": v}
        for k, v in (
            ("NAMESPACE", JOBS_NS),
            ("JOB_NAME", name),
            ("WORKER_NAME", f"inferworker-{uuid.uuid4().hex[:5]}"),
            ("LC_SERVER", "http://localhost:9100"),
            ("KB_SERVER", "http://localhost:9020"),
            ("MODEL_URL", "/home/data/model/frozen.pb"),
            ("HEM_NAME", "IBT"),
            ("HEM_PARAMETERS", "null"),
        )
    )
    c["volumeMounts"] = [{"name": "model", "mountPath": "/home/data/model/"}]
    spec["volumes"] = [{"name": "model", "hostPath": {"path": "/model/", "type": "Directory"}}]
    return {
        "metadata": {
            "generateName": f"{name}-inference-",
            "labels": {
                f"{LABEL}name": name,
                f"{LABEL}uid": owner["uid"],
                f"{LABEL}worker-type": "inference",
            },
            "ownerReferences": [owner],
            "managedFields": [
                _managed("sedna-gm", "Update", "v1", {"f:metadata": {}, "f:spec": {}}),
                _managed("kubelet", "Update", "v1", _STATUS_FIELDS),
            ],
        },
        "spec": spec,
        "status": _pod_status(
            "10.1.0.1", f"10.245.{hash(name) % 250}.{len(name)}", c["name"], c["image"]
        ),
    }


# -- the API server ---------------------------------------------------------------------


def _serve(cmd_q: Any, reply_q: Any) -> None:
    _quiet_logs()
    srv = _api_server(host="127.0.0.1", port=0, history=2000)
    srv.start()
    srv.install_crds_from_dir(CRDS)
    reply_q.put((srv.url, os.getpid()))
    from sedna.heap import HeapSettler

    settler = HeapSettler()  # as the CLI runs it in the embedded mode's process
    profile = os.environ.get("BENCH_PROFILE")
    if profile:
        import cProfile

        prof = cProfile.Profile()
    while (cmd := cmd_q.get()) is not None:
        started = time.perf_counter()
        counts = _seed(srv, **cmd)
        if not os.environ.get("BENCH_NO_SETTLE"):
            settler.start()
        if profile:  # the server's loop thread from here on (the GM's lists)
            srv._call(prof.enable)
        reply_q.put({"seconds": round(time.perf_counter() - started, 1), **counts})
    if profile:
        srv._call(prof.disable)
        prof.dump_stats(profile + ".server")
    settler.stop()
    srv.stop()


def _foreign_deployment(i: int) -> dict[str, Any]:
    labels = {"app": f"web-{i:05d}", "tier": "frontend"}
    pod = _foreign_pod(i)
    return {
        "metadata": {
            "name": f"web-{i:05d}",
            "labels": labels,
            "annotations": {"deployment.kubernetes.io/revision": "1"},
            "managedFields": [
                _managed("kubectl", "Update", "apps/v1", {"f:spec": {}}),
                _managed("kube-controller-manager", "Update", "apps/v1", {"f:status": {}}),
            ],
        },
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod["spec"]},
        },
        "status": {"replicas": 3, "readyReplicas": 3, "availableReplicas": 3},
    }


def _foreign_service(i: int) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"web-{i:05d}",
            "labels": {"app": f"web-{i:05d}"},
            "managedFields": [_managed("kubectl", "Update", "v1", {"f:spec": {}})],
        },
        "spec": {
            "selector": {"app": f"web-{i:05d}"},
            "ports": [{"name": "http", "port": 80, "targetPort": 80, "protocol": "TCP"}],
        },
    }


def _seed(
    srv: Any,
    *,
    jobs: int,
    cm_pods: int,
    foreign: int,
    unique_specs: bool = False,
    foreign_workloads: int = 0,
) -> dict[str, int]:
    """``jobs`` IL jobs each with its inference pod, ``cm_pods`` such pods owned by a
    ConfigMap (pods without jobs), ``foreign`` pods of another namespace, and
    ``foreign_workloads`` Deployments and as many Services there."""
    reg, ops, store = srv.registry, srv.ops, srv.store

    def rt(group: str, plural: str, version: str = "v1") -> Any:
        found = reg.get(group, version, plural)
        assert found is not None, plural
        return found

    ns_rt, pods_rt, cm_rt = rt("", "namespaces"), rt("", "pods"), rt("", "configmaps")
    jobs_rt = rt("sedna.io", "incrementallearningjobs", "v1alpha1")
    counts = {"jobs": 0, "owned_pods": 0, "foreign_pods": 0}
    deps_rt, svcs_rt = rt("apps", "deployments"), rt("", "services")
    if foreign_workloads:
        counts["foreign_workloads"] = 0

    def setup() -> dict[str, Any]:
        for ns in (JOBS_NS, FOREIGN_NS):
            ops.create(ns_rt, None, {"metadata": {"name": ns}})
        for name in ("initial-model", "deploy-model"):
            model = _sample("model_v1alpha1.yaml")
            model["metadata"]["name"] = name
            ops.create(rt("sedna.io", "models", "v1alpha1"), JOBS_NS, model)
        dataset = _sample("dataset_v1alpha1.yaml")
        dataset["metadata"]["name"] = "incremental-dataset"
        ops.create(rt("sedna.io", "datasets", "v1alpha1"), JOBS_NS, dataset)
        cm = ops.create(cm_rt, JOBS_NS, {"metadata": {"name": "owner"}})
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "owner",
            "uid": cm["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }

    cm_owner = srv._call(setup)
    template = _sample("incrementallearningjob_v1alpha1.yaml")

    def job_batch(lo: int, hi: int) -> None:
        for i in range(lo, hi):
            job = _job(i, template)
            if unique_specs:  # no template, trigger or dataset equal to another job's
                spec = job["spec"]
                spec["dataset"]["trainProb"] = 0.5 + i / (2 * max(jobs, 1))
                for part in ("trainSpec", "evalSpec", "deploySpec"):
                    c = spec[part]["template"]["spec"]["containers"][0]
                    c.setdefault("env", []).append({"name": "RUN", "value": f"run-{i}"})
                spec["trainSpec"]["trigger"]["condition"]["threshold"] = 500 + i
                spec["deploySpec"]["trigger"]["condition"]["threshold"] = 0.1 + i / 1e6
            made = ops.create(jobs_rt, JOBS_NS, job)
            cur = store.get(jobs_rt.key, JOBS_NS, made["metadata"]["name"])
            store.put(jobs_rt.key, dict(cur, status=_job_status()), cur)
            owner = {
                "apiVersion": "sedna.io/v1alpha1",
                "kind": "IncrementalLearningJob",
                "name": made["metadata"]["name"],
                "uid": made["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
            ops.create(pods_rt, JOBS_NS, _inference_pod(job, owner))
            counts["jobs"] += 1
            counts["owned_pods"] += 1

    def cm_batch(lo: int, hi: int) -> None:
        for i in range(lo, hi):
            ops.create(pods_rt, JOBS_NS, _inference_pod(_job(i, template), cm_owner))
            counts["owned_pods"] += 1

    def foreign_batch(lo: int, hi: int) -> None:
        for i in range(lo, hi):
            ops.create(pods_rt, FOREIGN_NS, _foreign_pod(i))
            counts["foreign_pods"] += 1

    def workload_batch(lo: int, hi: int) -> None:
        for i in range(lo, hi):
            ops.create(deps_rt, FOREIGN_NS, _foreign_deployment(i))
            ops.create(svcs_rt, FOREIGN_NS, _foreign_service(i))
            counts["foreign_workloads"] += 1

    for fn, n in (
        (job_batch, jobs),
        (cm_batch, cm_pods),
        (foreign_batch, foreign),
        (workload_batch, foreign_workloads),
    ):
        for lo in range(0, n, 500):
            srv._call(lambda fn=fn, lo=lo, n=n: fn(lo, min(lo + 500, n)))
    return counts


# -- the GM -----------------------------------------------------------------------------


def _gm(url: str, variant: str, port: int, expect_jobs: int, out_q: Any) -> None:
    """The real Manager with the IL feature over all namespaces; reports when idle."""
    from loguru import logger

    logger.remove()
    logger.add(open(os.devnull, "w"), level="INFO")  # noqa: SIM115  # production level
    logger.add(sys.stderr, level="WARNING")

    import sedna_incremental_learning.plugin as il_plugin
    from dependency_injector import providers

    import sedna.runtime.controller as controller_mod
    from sedna.manager import Manager
    from sedna.plugins.loader import discover_plugins
    from sedna.runtime import GMConfig, RuntimeContainer, SharedInformerFactory
    from sedna.runtime.kube import PODS

    imported_at = time.perf_counter()
    first_sync: dict[str, float] = {}
    original = controller_mod.Controller._process

    def recording(self: Any, key: str) -> None:
        first_sync.setdefault(key, time.perf_counter())
        original(self, key)

    controller_mod.Controller._process = recording  # type: ignore[method-assign]

    class NoTransform(SharedInformerFactory):
        """Objects cached as they come (worker pods too)."""

        def __init__(self, *a: Any, **k: Any) -> None:
            super().__init__(*a, worker_pod_transform=lambda o: o, **k)
            self.default_transform = None  # type: ignore[assignment]

    class Unscoped(SharedInformerFactory):
        """The factory before scoping: every pod, whole, one informer for all features;
        one informer of every Deployment, Service and HPA."""

        def worker_pods(self, res: Any, *, namespace: str | None = None) -> Any:
            return self.informer(PODS, namespace=namespace, transform=None)

        def owned_by_kind(self, res: Any, owner: Any, *, namespace: str | None = None) -> Any:
            return self.informer(res, namespace=namespace)

    # (Unscoped keeps the default transform for jobs: only the pod informer is as before)

    features: dict[str, Any] = {
        p.name: {"enabled": False} for p in discover_plugins() if p.name != il_plugin.FEATURE_NAME
    }
    features[il_plugin.FEATURE_NAME] = {"workers": 4}
    if variant in FOREIGN_VARIANTS:  # the features with Deployment and Service informers
        features.update({name: {"workers": 1} for name in WORKLOAD_FEATURES})
    config = GMConfig.model_validate(
        {
            "namespace": "",
            "minResyncPeriodSeconds": 3600,
            "websocket": {"address": "127.0.0.1", "port": 0, "auth": "none"},
            "metrics": {
                "enabled": port > 0,
                "address": "127.0.0.1",
                "port": port,
                "auth": "none",  # a local benchmark's scrape
            },
            "features": features,
        }
    )
    container = RuntimeContainer(config=config)
    container.api_client.override(providers.Object(_api_client(url)))
    if variant in ("unscoped", "no-transform", "foreign-unscoped"):
        container.informers.override(
            providers.Singleton(
                NoTransform if variant == "no-transform" else Unscoped,
                container.kube,
                namespace="",
                min_resync_period=3600.0,
                clock=container.clock,
            )
        )
    if variant != "startup":
        container.downstream.override(providers.Object(lambda node, event, obj: None))
    manager = Manager(
        config, container=container, extra_plugins={il_plugin.FEATURE_NAME: il_plugin}
    )
    from sedna.heap import HeapSettler

    settler = HeapSettler()  # as the CLI runs it
    if variant == "startup" and not os.environ.get("BENCH_NO_SETTLE"):
        settler.start()
    profile = os.environ.get("BENCH_PROFILE")  # a file: the start's profile, all threads
    from thread_profiles import profile_threads  # bench/, as embedded_server

    merged = profile_threads(this_thread=True) if profile else None
    manager.start()
    started_at = time.perf_counter()
    if merged is not None:
        assert profile
        time.sleep(1.0)  # the first syncs
        merged().dump_stats(profile)
    # idle: every job synced once and the process' CPU no longer moving
    deadline = time.monotonic() + 300
    cpu = -1.0
    while time.monotonic() < deadline:
        time.sleep(0.5)
        ru = resource.getrusage(resource.RUSAGE_SELF)
        now = ru.ru_utime + ru.ru_stime
        jobs_synced = sum(1 for k in first_sync if k.startswith(JOBS_NS + "/job-"))
        if jobs_synced >= expect_jobs and now - cpu < 0.02:
            break
        cpu = now
    informers = container.informers().informers
    pods_cached = sum(len(i.lister.list()) for i in informers if i.resource.plural == "pods")
    syncs = sorted(t for k, t in first_sync.items() if k.startswith(JOBS_NS + "/job-"))
    out_q.put(
        {
            "rss": _rss(),
            "pods_cached": pods_cached,
            "foreign_pods_cached": sum(
                len(i.lister.list(FOREIGN_NS)) for i in informers if i.resource.plural == "pods"
            ),
            "pod_informer_selectors": sorted(
                str(i.label_selector) for i in informers if i.resource.plural == "pods"
            ),
            "foreign_workloads_cached": sum(
                len(i.lister.list(FOREIGN_NS))
                for i in informers
                if i.resource.plural in ("deployments", "services")
            ),
            "workload_informer_selectors": sorted(
                f"{i.resource.plural}:{i.label_selector}"
                for i in informers
                if i.resource.plural in ("deployments", "services", "horizontalpodautoscalers")
            ),
            "jobs_cached": sum(
                len(i.lister.list())
                for i in informers
                if i.resource.plural == "incrementallearningjobs"
            ),
            "imported": imported_at,
            "started": started_at,
            "first_sync": syncs[0] if syncs else None,
            "last_sync": syncs[-1] if syncs else None,
            "jobs_synced": len(syncs),
            "cpu_s": round(cpu, 2),
        }
    )
    settler.stop()
    manager.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(ctx: Any, seed: dict[str, Any], variant: str, expect_jobs: int) -> dict[str, Any]:
    cmd_q, reply_q = ctx.Queue(), ctx.Queue()
    server = ctx.Process(target=_serve, args=(cmd_q, reply_q), daemon=True)
    server.start()
    try:
        url, _pid = reply_q.get(timeout=120)
        cmd_q.put(seed)
        seeded = reply_q.get(timeout=600)
        out_q = ctx.Queue()
        port = _free_port() if variant == "startup" else 0
        t0 = time.perf_counter()
        gm = ctx.Process(target=_gm, args=(url, variant, port, expect_jobs, out_q))
        gm.start()
        ready_at = None
        if port:
            while ready_at is None and gm.is_alive():
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
                        if r.status == 200:
                            ready_at = time.perf_counter()
                except (urllib.error.URLError, OSError):
                    time.sleep(0.02)
        try:
            report = out_q.get(timeout=400)
        except queue.Empty:
            gm.kill()
            raise SystemExit(f"{variant}: the GM did not report") from None
        gm.join(30)
        if gm.is_alive():
            gm.kill()
    finally:
        cmd_q.put(None)
        server.join(30)
        if server.is_alive():
            server.kill()
    report["seeded"] = seeded
    if ready_at is not None:
        report["ready_s"] = round(ready_at - t0, 2)
    for k in ("imported", "started", "first_sync", "last_sync"):
        if report.get(k) is not None:
            report[k + "_s"] = round(report.pop(k) - t0, 2)
        else:
            report.pop(k, None)
    return report


MIB = 1024 * 1024


# the GM of the foreign part: IL and every feature with Deployment or Service informers
FOREIGN_VARIANTS = ("foreign", "foreign-unscoped")
WORKLOAD_FEATURES = (
    "joint_inference",
    "feature_extraction",
    "object_search",
    "object_tracking",
    "reid",
    "video_analytics",
    "federated_learning",
)


def _foreign(ctx: Any, n: int, jobs: int, workloads: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, variant in (("gm", "foreign"), ("unscoped", "foreign-unscoped")):
        base = _run(ctx, {"jobs": jobs, "cm_pods": 0, "foreign": 0}, variant, jobs)
        seed = {"jobs": jobs, "cm_pods": 0, "foreign": n, "foreign_workloads": workloads}
        full = _run(ctx, seed, variant, jobs)
        out[name] = {
            "rss_growth_mib": round((full["rss"] - base["rss"]) / MIB, 2),
            "rss_base_mib": round(base["rss"] / MIB, 1),
            "pods_cached": full["pods_cached"],
            "foreign_pods_cached": full["foreign_pods_cached"],
            "foreign_deployments_and_services": workloads,
            "foreign_workloads_cached": full["foreign_workloads_cached"],
            "pod_informer_selectors": full["pod_informer_selectors"],
            "workload_informer_selectors": full["workload_informer_selectors"],
        }
        print(f"foreign {n} {name}: {out[name]}", file=sys.stderr, flush=True)
    return out


def _cache(ctx: Any, n: int, unique_specs: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for variant in ("gm", "no-transform"):
        empty = _run(ctx, {"jobs": 0, "cm_pods": 0, "foreign": 0}, variant, 0)
        pods = _run(ctx, {"jobs": 0, "cm_pods": n, "foreign": 0}, variant, 0)
        both = _run(ctx, {"jobs": n, "cm_pods": 0, "foreign": 0}, variant, n)
        unique = None
        if variant == "gm" and unique_specs:
            seed = {"jobs": n, "cm_pods": 0, "foreign": 0, "unique_specs": True}
            unique = _run(ctx, seed, variant, n)
        out[variant] = {
            "bytes_per_pod": round((pods["rss"] - empty["rss"]) / n),
            "bytes_per_job": round((both["rss"] - pods["rss"]) / n),
            **(
                {"bytes_per_job_unique_specs": round((unique["rss"] - pods["rss"]) / n)}
                if unique is not None
                else {}
            ),
            "rss_mib": {
                "empty": round(empty["rss"] / MIB, 1),
                "pods": round(pods["rss"] / MIB, 1),
                "jobs_and_pods": round(both["rss"] / MIB, 1),
            },
            "cached": {"pods": pods["pods_cached"], "jobs": both["jobs_cached"]},
        }
        print(f"cache {n} {variant}: {out[variant]}", file=sys.stderr, flush=True)
    return out


def _startup(ctx: Any, jobs: int, foreign: int) -> dict[str, Any]:
    r = _run(ctx, {"jobs": jobs, "cm_pods": 0, "foreign": foreign}, "startup", jobs)
    out = {
        k: r.get(k)
        for k in (
            "ready_s",
            "imported_s",
            "started_s",
            "first_sync_s",
            "last_sync_s",
            "jobs_synced",
            "pods_cached",
        )
    }
    out["rss_mib"] = round(r["rss"] / MIB, 1)
    out["seeded"] = r["seeded"]
    print(f"startup {jobs} jobs {jobs + foreign} pods: {out}", file=sys.stderr, flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="foreign,cache,startup")
    parser.add_argument("--fractions", default="0.1,0.333,1")
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--foreign", type=int, default=30_000)
    parser.add_argument(
        "--foreign-jobs", type=int, default=100, help="jobs beside the foreign pods"
    )
    parser.add_argument(
        "--foreign-workloads",
        type=int,
        default=3_000,
        help="foreign part: Deployments and as many Services no feature owns",
    )
    parser.add_argument(
        "--unique-specs",
        action="store_true",
        help="cache part: also jobs whose specs all differ (nothing to share)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    _quiet_logs()
    if importlib.util.find_spec("embedded_server") is not None:
        import embedded_server  # noqa: F401  # picks the PKI directory the children inherit
    ctx = mp.get_context("spawn")
    fractions = [float(f) for f in args.fractions.split(",") if f]
    parts = [p for p in args.parts.split(",") if p]
    results: dict[str, Any] = {p: {} for p in parts}
    for frac in fractions:
        jobs, foreign = max(1, round(args.jobs * frac)), max(1, round(args.foreign * frac))
        if "foreign" in parts:
            workloads = max(1, round(args.foreign_workloads * frac))
            results["foreign"][str(foreign)] = _foreign(ctx, foreign, args.foreign_jobs, workloads)
        if "cache" in parts:
            results["cache"][str(jobs)] = _cache(ctx, jobs, args.unique_specs)
        if "startup" in parts:
            results["startup"][f"{jobs}/{jobs + foreign}"] = _startup(ctx, jobs, foreign)
    previous: dict[str, Any] = {}
    previous_runs: dict[str, Any] = {}
    if args.out.exists():
        old = json.loads(args.out.read_text())
        previous = old.get("results", {})
        previous_runs = old.get("runs", {}) if isinstance(old.get("runs"), dict) else {}
    run = {
        "command": " ".join(["python bench/bench_fleet.py", *sys.argv[1:]]),
        "parameters": {"jobs": args.jobs, "foreign": args.foreign, "fractions": fractions},
        "load_average_at_end": os.getloadavg(),
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    doc = {
        "benchmark": "fleet",
        # a partial run (--parts, --fractions) replaces only the figures it measured;
        # `runs` says which run measured each part
        "results": {
            part: {**previous.get(part, {}), **results.get(part, {})}
            for part in {*previous, *results}
        },
        "runs": {**previous_runs, **{part: run for part in results}},
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
