"""This GM against Sedna's Go GM, side by side: CPU per job, wall, peak and idle RSS, idle CPU.

The two GMs run in turns, never at once, each on a fresh API server of its own
(`sedna-gm apiserver`, one process per run) and with all its features as shipped. A
round of one GM (`one_round`, the same for every kind):

1. start the API server, then the GM (ours: `sedna-gm --config` against the server's
   kubeconfig, LC websocket auth `none` as Sedna's, no leader election; Go's: its
   `--config` in Sedna's format); create the Nodes the examples' worker templates and
   Datasets name (`cloud-node`, `edge-node`, `edge-node-2`: the API server's PodGC
   deletes pods bound to a missing Node after 40 s, which made the Go GM, minutes into
   a round, create its workers again); for the kinds with an LC (ds, il, ll), also the
   bench namespace and the scripted LC of `edge-node` (`sedna.testing.LCBase`, the Go
   LC's protocol);
2. idle, no objects: CPU ms/s of the GM process over `--idle-seconds`, and its RSS;
3. create the inputs of `--jobs` jobs of a kind with 4 writer threads and wait until
   every job is done (below);
4. CPU per job (the GM process's user+system time from the first create to the last
   job done, per job), wall for the same span, peak RSS (VmHWM);
5. idle with the jobs present and nothing changing: CPU ms/s again.

The kinds, and when a job is done:

- `fl`, `ji`, `os`, `fe`, `reid`, `va`: the kinds whose work is driven without an LC;
  none connects and nothing runs a worker (pods stay Pending). FL: Sedna's
  surface-defect-detection example, one Model and two Datasets shared, jobs renamed,
  done with its aggregation Service and 3 worker pods; JI: the helmet-detection example,
  2 Deployments and a Service; the multi-edge kinds ObjectSearch (2 tracking pods, 2
  Deployments, 2 Services), FeatureExtraction (a Deployment and a Service), ReID (a pod)
  and VideoAnalytics (a pod and a Service): their examples.
- `ds`, the Dataset fan-out: `--jobs` Datasets on the LC's node, each done once the LC
  has received it. (Sedna sends a Model to an LC only inside a job's message: there is
  no Model fan-out of its own to measure.)
- `il`, `ll`: IncrementalLearningJobs (the helmet-detection example, its two Models
  shared) and LifelongLearningJobs (the ATCII example), each with a Dataset of its own
  on the LC's node. The scripted LC (`StagedLC`) answers both GMs alike, as Sedna's LC
  does: each Dataset's sample count (`numberOfSamples` 200), then `train ready` with
  the stage's input for a job at Train/Waiting once its Dataset was counted and its
  train trigger fires on that count; a stand-in kubelet (`RunningWorkers`) moves each
  train worker to Running, upon which the GM sends the job to the worker's node at
  Train/Running; the LC then relays the worker's `train completed` with a trained
  model; at Eval/Waiting it reports `eval ready`. A job is done when the GM has created
  its eval worker pod: one train stage through and the eval stage started (conditions
  Train/Waiting, Ready, Starting, Running, Completed, then Eval/Waiting, Ready,
  Starting). IL's inference worker, made at the job's start, and the eval worker stay
  Pending. Go's GM throttles its API clients to 5 requests per second and takes about
  8 s a job on this path, so il and ll default to 20 jobs (a Go round of 2.5-3
  minutes); `--jobs` applies to them too. Go's message layer can also hold back a
  message to an LC (it queues the key before it stores the message, and a write loop
  that finds no message drops the key) until the next message for that object, at
  worst the informer resync 30-60 s later: that is in Go's wall, as with a real LC. Go's
  CPU per job counts all it spends over its long wall, resyncs included.

Each figure is the median over `--rounds` with its range; the ratios are this GM's over
Go's.

Run: `python bench/bench_vs_sedna.py [--kinds fl,ji,os,fe,reid,va,ds,il,ll] [--jobs N]
[--rounds R] [--idle-seconds S]` (defaults: every kind, 200 jobs (il, ll: 20), 3 rounds,
20 s). Needs Sedna's Go GM (`$SEDNA_GO_GM_BIN`, else `../shared/sedna-bin/sedna-gm`
beside the checkout): without it, it says so and exits 0. Writes
`bench/results/vs_sedna.json`.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import queue
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from sedna.runtime import KubeClient, Resource

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results" / "vs_sedna.json"
EXAMPLES = ROOT / "examples"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def go_gm_binary() -> Path | None:
    env = os.environ.get("SEDNA_GO_GM_BIN")
    path = Path(env) if env else ROOT.parent / "shared" / "sedna-bin" / "sedna-gm"
    return path if path.is_file() and os.access(path, os.X_OK) else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


def memory_mb(pid: int, key: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def wait_for(probe: Callable[[], Any], what: str, timeout: float, step: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = probe()
        if got:
            return got
        time.sleep(step)
    raise SystemExit(f"timed out after {timeout:g} s waiting for {what}")


# -- processes ------------------------------------------------------------------------


class Proc:
    def __init__(self, argv: list[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.log = log
        self.metrics_port = 0  # ours: where /readyz answers
        self.ws_port = 0  # the LC websocket
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def start_apiserver(folder: Path) -> tuple[Proc, Path]:
    kubeconfig = folder / "kubeconfig"
    proc = Proc(
        [sys.executable, "-m", "sedna.cli", "apiserver", "--port", "0",
         "--kubeconfig", str(kubeconfig), "--state-dir", str(folder / "state")],
        folder / "apiserver.log",
    )  # fmt: skip
    wait_for(kubeconfig.exists, "the API server's kubeconfig", 60)
    return proc, kubeconfig


def start_ours(folder: Path, kubeconfig: Path, *, wait: bool = True) -> Proc:
    config = yaml.safe_load((ROOT / "config" / "gm.cluster.yaml").read_text())
    config["kubeConfig"] = str(kubeconfig)
    config["websocket"].update(address="127.0.0.1", port=free_port(), auth="none")
    config["metrics"] = {"enabled": True, "address": "127.0.0.1", "port": free_port(),
                         "auth": "none"}  # fmt: skip
    config["leaderElection"] = {"enabled": False}
    config["logging"] = {"level": "WARNING", "format": "text"}
    path = folder / "gm.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = Proc([sys.executable, "-m", "sedna.cli", "--config", str(path)], folder / "gm.log")
    port = proc.metrics_port = config["metrics"]["port"]
    proc.ws_port = config["websocket"]["port"]
    if wait:
        wait_for(lambda: _http_ok(f"http://127.0.0.1:{port}/readyz"), "our GM's /readyz", 120)
    return proc


def start_go(folder: Path, kubeconfig: Path, binary: Path) -> Proc:
    port = free_port()
    config = {
        "kubeConfig": str(kubeconfig),
        "namespace": "",
        "websocket": {"address": "127.0.0.1", "port": port},
        "localController": {"server": "http://localhost:9100"},
    }
    path = folder / "gm-config.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = Proc([str(binary), "--config", str(path)], folder / "gm.log")
    proc.ws_port = port
    wait_for(lambda: _listening(port), "the Go GM's websocket port", 120)
    return proc


def _http_ok(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


# -- kinds ----------------------------------------------------------------------------


def _docs(*files: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for f in files:
        out += [d for d in yaml.safe_load_all((EXAMPLES / f).read_text()) if d]
    return out


class Kind:
    """What to create for a kind, and when a job of it is done."""

    def __init__(
        self,
        name: str,
        shared: list[dict[str, Any]],
        job: dict[str, Any],
        label: str,
        wanted: dict[str, int],
    ) -> None:
        self.name, self.shared, self.job, self.label, self.wanted = (
            name, shared, job, label, wanted)  # fmt: skip


KINDS = {
    "fl": Kind(
        "FederatedLearningJob",
        _docs("federated-learning/01-model.yaml", "federated-learning/02-datasets.yaml"),
        _docs("federated-learning/03-federated-learning-job.yaml")[0],
        "federatedlearningjob.sedna.io/name",
        {"pods": 3, "services": 1},
    ),
    "ji": Kind(
        "JointInferenceService",
        _docs("joint-inference/01-models.yaml"),
        _docs("joint-inference/02-joint-inference-service.yaml")[0],
        "jointinferenceservice.sedna.io/name",
        {"deployments": 2, "services": 1},
    ),
    # The multi-edge kinds Sedna's Go GM has a controller for (ObjectTrackingService:
    # none, so nothing to compare).
    "os": Kind(
        "ObjectSearchService",
        [],
        _docs("object-search-service/object-search-service.yaml")[0],
        "objectsearchservice.sedna.io/name",
        {"pods": 2, "deployments": 2, "services": 2},
    ),
    "fe": Kind(
        "FeatureExtractionService",
        _docs("feature-extraction-service/01-model.yaml"),
        _docs("feature-extraction-service/02-feature-extraction-service.yaml")[0],
        "featureextractionservice.sedna.io/name",
        {"deployments": 1, "services": 1},
    ),
    "reid": Kind(
        "ReidJob",
        [],
        _docs("reid-job/reid-job.yaml")[0],
        "reidjob.sedna.io/name",
        {"pods": 1},
    ),
    "va": Kind(
        "VideoAnalyticsJob",
        _docs("video-analytics-job/01-model.yaml"),
        _docs("video-analytics-job/02-video-analytics-job.yaml")[0],
        "videoanalyticsjob.sedna.io/name",
        {"pods": 1, "services": 1},
    ),
}


def _plural(kind: str) -> str:
    return kind.lower() + "s"


def create_inputs(kubeconfig: Path, ns: str, kind: Kind, jobs: int) -> None:
    from sedna.runtime import KubeClient, api_client_from_config, sedna_resource
    from sedna.runtime.kube import NAMESPACES

    kube = KubeClient(api_client_from_config(str(kubeconfig), ""))
    kube.resource(NAMESPACES).create(None, {"metadata": {"name": ns}})
    for doc in kind.shared:
        doc = {**doc, "metadata": {k: v for k, v in doc["metadata"].items() if k != "namespace"}}
        kube.resource(sedna_resource(_plural(doc["kind"]))).create(ns, doc)
    res = kube.resource(sedna_resource(_plural(kind.name)))

    def create(i: int) -> None:
        job = copy.deepcopy(kind.job)
        job["metadata"] = {"name": f"job-{i:05d}"}
        res.create(ns, job)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(create, range(jobs)))


def done_jobs(kubeconfig: Path, ns: str, kind: Kind, jobs: int) -> int:
    from sedna.runtime import KubeClient, api_client_from_config
    from sedna.runtime.kube import DEPLOYMENTS, PODS, SERVICES

    kube = KubeClient(api_client_from_config(str(kubeconfig), ""))
    counts: dict[str, dict[str, int]] = {}
    for what, res in (("pods", PODS), ("services", SERVICES), ("deployments", DEPLOYMENTS)):
        if what not in kind.wanted:
            continue
        for obj in kube.resource(res).list(ns, label_selector=kind.label)["items"]:
            name = obj["metadata"]["labels"][kind.label]
            counts.setdefault(name, {}).setdefault(what, 0)
            counts[name][what] += 1
    return sum(1 for c in counts.values() if all(c.get(w, 0) >= n for w, n in kind.wanted.items()))


# -- what a round creates, and when a job is done ---------------------------------------

NS = "bench"
EDGE_NODE = "edge-node"  # the node of the examples' Datasets and worker templates


class Workload:
    """One kind's part of a round: the edge it needs, what it creates, how many are done.

    A fresh instance serves one round of one GM.
    """

    def start(self, kubeconfig: Path, gm: Proc) -> None:
        """Before the idle figure: what must be there when the jobs come (an LC, ...)."""

    def create(self, kubeconfig: Path, count: int) -> None:
        raise NotImplementedError

    def done(self, kubeconfig: Path, count: int) -> int:
        raise NotImplementedError

    def stop(self) -> None:
        """After the round, also when it failed."""


class PodJobs(Workload):
    """A kind whose work needs no LC: done when the GM made its workers and Services."""

    def __init__(self, kind: Kind) -> None:
        self.kind = kind

    def start(self, kubeconfig: Path, gm: Proc) -> None:
        create_nodes(kubeconfig)

    def create(self, kubeconfig: Path, count: int) -> None:
        create_inputs(kubeconfig, NS, self.kind, count)

    def done(self, kubeconfig: Path, count: int) -> int:
        return done_jobs(kubeconfig, NS, self.kind, count)


def _kube(kubeconfig: Path) -> KubeClient:
    from sedna.runtime import KubeClient, api_client_from_config

    return KubeClient(api_client_from_config(str(kubeconfig), ""))


# every node the examples' worker templates and Datasets name
EXAMPLE_NODES = ("cloud-node", EDGE_NODE, "edge-node-2")


def create_nodes(kubeconfig: Path) -> None:
    """The examples' Nodes: a pod bound to a node that does not exist is deleted by the
    API server's PodGC after 40 s, as kube-controller-manager's. Without them the Go GM,
    whose 5 requests a second make a round of 200 jobs last minutes, made its workers
    again and again and never finished 200 FederatedLearningJobs."""
    from sedna.runtime.kube import NODES

    nodes = _kube(kubeconfig).resource(NODES)
    for name in EXAMPLE_NODES:
        nodes.create(None, {"metadata": {"name": name}, "status": {
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}]}})  # fmt: skip


def create_edge(kubeconfig: Path) -> None:
    """The bench namespace and the examples' Nodes (`create_nodes`)."""
    from sedna.runtime.kube import NAMESPACES

    _kube(kubeconfig).resource(NAMESPACES).create(None, {"metadata": {"name": NS}})
    create_nodes(kubeconfig)


def connect_lc(gm: Proc, lc: Callable[[int], Any]) -> Any:
    """`lc(port)` once the GM's LC websocket takes it (None meanwhile)."""

    def attempt() -> Any:
        try:
            return lc(gm.ws_port)
        except OSError:
            return None

    return wait_for(attempt, "the GM's LC websocket", 60)


class DatasetFanout(Workload):
    """`count` Datasets on one node, until the node's LC (a scripted client) has each."""

    lc: Any = None

    def start(self, kubeconfig: Path, gm: Proc) -> None:
        from sedna.testing import LCBase

        create_edge(kubeconfig)
        self.lc = connect_lc(gm, lambda port: LCBase(port, EDGE_NODE))

    def create(self, kubeconfig: Path, count: int) -> None:
        create_datasets(kubeconfig, NS, count)

    def done(self, kubeconfig: Path, count: int) -> int:
        return len({m.name for m in self.lc.select("dataset")})

    def stop(self) -> None:
        if self.lc is not None:
            self.lc.close()


def create_datasets(kubeconfig: Path, ns: str, count: int) -> None:
    res = _kube(kubeconfig).resource(_sedna("datasets"))
    template = _docs("incremental-learning/02-dataset.yaml")[0]

    def create(i: int) -> None:
        doc = copy.deepcopy(template)
        doc["metadata"] = {"name": f"ds-{i:05d}"}
        doc["spec"]["nodeName"] = EDGE_NODE
        res.create(ns, doc)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(create, range(count)))


def _sedna(plural: str) -> Resource:
    from sedna.runtime import sedna_resource

    return sedna_resource(plural)


# -- IL and LL: a scripted LC and kubelet -------------------------------------------------

DEPLOY_MODEL_URL = "/models/deploy_model/saved_model.pb"  # IL's deploy Model
SAMPLES = 200  # what the LC reports for each Dataset: 160 train samples at trainProb 0.8
_COMPARE: dict[str, Callable[[float, float], bool]] = {
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, "=": lambda a, b: a == b, "==": lambda a, b: a == b,
}  # fmt: skip


def _state(job: dict[str, Any]) -> str:
    conds = (job.get("status") or {}).get("conditions") or []
    return f"{conds[-1].get('stage')}/{conds[-1].get('type')}" if conds else ""


def _train_triggered(job: dict[str, Any], samples: int) -> bool:
    """The job's train trigger condition (`num_of_samples`) on the new train samples,
    as Sedna's LC evaluates it (its time window aside: the examples' is the whole day)."""
    spec = job.get("spec") or {}
    cond = ((spec.get("trainSpec") or {}).get("trigger") or {}).get("condition") or {}
    train = int(samples * float((spec.get("dataset") or {}).get("trainProb") or 1.0))
    compare = _COMPARE.get(str(cond.get("operator", ">")))
    return compare is not None and compare(train, float(cond.get("threshold", 0)))


class StagedLC:
    """The edge node's LC for IL or LL jobs, answering what the GM sends as Sedna's does.

    - A Dataset: its sample count (`{"numberOfSamples": N}`), as the LC's dataset monitor
      reports it once it read the file.
    - A job at Train/Waiting whose Dataset was counted and whose train trigger fires on
      that count: `train ready` with the stage's input (the samples' files, the base
      model for IL, the output folder), as the LC's job manager does.
    - A job at Train/Running (sent to the train worker's node): `train completed` with the
      trained model, which the LC relays from the worker's report (`POST .../info`).
    - A job at Eval/Waiting: `eval ready` with the models to evaluate and the eval samples.

    Each answer is sent once per job. Replies go out from a thread of their own, so the
    websocket reader never waits on a send.
    """

    def __init__(self, port: int, kind: str) -> None:
        from sedna.testing import LCBase

        self.kind = kind.lower()  # the header's resourceKind
        self.ll = kind == "LifelongLearningJob"
        self.inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.counted: set[str] = set()  # Datasets whose count was reported
        self.parked: dict[str, list[tuple[str, dict[str, Any]]]] = {}  # dataset -> jobs
        self.answered: set[tuple[str, str]] = set()
        self.sent = 0
        self.lc = LCBase(port, EDGE_NODE, received=_Inbox(self.inbox.put))
        self._thread = threading.Thread(target=self._answer, daemon=True, name="staged-lc")
        self._thread.start()

    def _answer(self) -> None:
        while (m := self.inbox.get()) is not None:
            if m.operation != "insert":
                continue
            if m.kind == "dataset" and m.name not in self.counted:
                self.counted.add(m.name)
                self._send(m.namespace, "dataset", m.name, {"numberOfSamples": SAMPLES})
                for ns, job in self.parked.pop(m.name, []):
                    self._on_job(ns, job)
            elif m.kind == self.kind:
                self._on_job(m.namespace, m.payload)

    def _on_job(self, ns: str, job: dict[str, Any]) -> None:
        name, state = job["metadata"]["name"], _state(job)
        if (name, state) in self.answered:
            return
        dataset = ((job.get("spec") or {}).get("dataset") or {}).get("name", "")
        if state == "Train/Waiting" and dataset not in self.counted:
            self.parked.setdefault(dataset, []).append((ns, job))  # the LC waits for it
            return
        if state == "Train/Waiting" and not _train_triggered(job, SAMPLES):
            return
        payload = self._report(name, state)
        if payload is not None:
            self.answered.add((name, state))
            self._send(ns, self.kind, name, payload)

    def _report(self, name: str, state: str) -> dict[str, Any] | None:
        """What Sedna's LC sends at `state`: its IL and LL managers' trigger messages and
        the worker's completion report it relays."""
        out = f"/output/{name}"
        base = {"format": "pb", "url": "/models/base_model"}  # IL's initial Model
        trained: dict[str, Any] = {"format": "pb", "url": f"{out}/train/1/model.pb",
                                   "classes": ["a", "b"]}  # fmt: skip
        if self.ll:
            trained.update(number_of_labeled_unseen_sample=10,
                           current_metric={"task-0": {"precision": 0.8}})  # fmt: skip
        data = {"dataURL": f"/data/{name}/train/1.txt",
                "dataIndexURL": f"/data/{name}/train/index-1.txt"}  # fmt: skip
        if state == "Train/Waiting":
            train_in: dict[str, Any] = {**data, "outputDir": f"{out}/train/1"}
            if not self.ll:
                train_in["models"] = [base]
            return {"phase": "train", "status": "ready", "input": train_in}
        if state == "Train/Running":
            return {"phase": "train", "status": "completed", "output": {"models": [trained]}}
        if state == "Eval/Waiting":
            eval_in: dict[str, Any] = {
                "dataURL": f"/data/{name}/eval/1.txt",
                "dataIndexURL": f"/data/{name}/eval/index-1.txt",
            }
            if self.ll:
                eval_in.update(models=[trained], outputDir=f"{out}/eval/1")
            else:
                eval_in["models"] = [trained, {"format": "pb", "url": DEPLOY_MODEL_URL}]
            return {"phase": "eval", "status": "ready", "input": eval_in}
        return None

    def _send(self, ns: str, kind: str, name: str, payload: dict[str, Any]) -> None:
        try:
            self.lc.send_status(ns, kind, name, payload)
            self.sent += 1
        except Exception:  # the GM or the bench closed the connection
            pass

    def close(self) -> None:
        self.lc.close()
        self.inbox.put(None)
        self._thread.join(5)


class _Inbox(list[Any]):
    """`LCBase.received` handing each message on instead of keeping it."""

    def __init__(self, put: Callable[[Any], None]) -> None:
        super().__init__()
        self.put = put

    def append(self, m: Any) -> None:
        self.put(m)


class RunningWorkers:
    """The kubelet's part: each new train worker of a kind goes Running on its node.

    Both GMs take the train stage to Running (and send the job to the worker's node)
    only once the pod runs. Nothing else is started: other pods stay Pending.
    """

    def __init__(self, kubeconfig: Path, kind: str) -> None:
        from sedna.runtime.kube import PODS

        self.pods = _kube(kubeconfig).resource(PODS)
        self.selector = f"{kind.lower()}.sedna.io/worker-type=train"
        self.started: set[str] = set()
        self._stop = threading.Event()
        self._stream: Any = None
        self._thread = threading.Thread(target=self._run, daemon=True, name="kubelet")
        self._thread.start()

    def _run(self) -> None:
        rv = ""  # list first (again after a watch error)
        while not self._stop.is_set():
            try:
                if not rv:
                    listed = self.pods.list(NS, label_selector=self.selector)
                    for pod in listed["items"]:
                        self._run_pod(pod)
                    rv = listed["metadata"]["resourceVersion"]
                with self.pods.watch(NS, resource_version=rv, timeout_seconds=60,
                                     label_selector=self.selector) as stream:  # fmt: skip
                    self._stream = stream
                    for ev in stream:
                        if ev.get("type") == "ERROR":  # 410 Gone: relist
                            rv = ""
                            break
                        pod = ev.get("object") or {}
                        rv = pod.get("metadata", {}).get("resourceVersion") or rv
                        if ev.get("type") in ("ADDED", "MODIFIED"):
                            self._run_pod(pod)
            except Exception:
                if not self._stop.is_set():
                    time.sleep(0.5)

    def _run_pod(self, pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        if name in self.started or pod["metadata"].get("deletionTimestamp"):
            return
        self.started.add(name)
        self.pods.patch(NS, name, {"status": {"phase": "Running"}}, subresource="status")

    def stop(self) -> None:
        self._stop.set()
        if self._stream is not None:
            self._stream.close()
        self._thread.join(10)


class StagedJobs(Workload):
    """IL or LL jobs, each with a Dataset of its own on the edge node, driven by a scripted
    LC and kubelet; a job is done when the GM created its eval worker."""

    lc: StagedLC | None = None
    kubelet: RunningWorkers | None = None
    kube: KubeClient | None = None

    def __init__(self, kind: str, job: str, dataset: str, *shared: str) -> None:
        """`kind`'s job in the example file `job`, its Dataset in `dataset`; the Models
        in the files `shared` are created once for all jobs."""
        self.kind = kind
        self.job, self.dataset = _docs(job)[0], _docs(dataset)[0]
        self.shared = [{**d, "metadata": {"name": d["metadata"]["name"]}} for d in _docs(*shared)]

    def start(self, kubeconfig: Path, gm: Proc) -> None:
        create_edge(kubeconfig)
        self.kube = _kube(kubeconfig)
        self.lc = connect_lc(gm, lambda port: StagedLC(port, self.kind))
        self.kubelet = RunningWorkers(kubeconfig, self.kind)

    def create(self, kubeconfig: Path, count: int) -> None:
        kube = _kube(kubeconfig)
        for doc in self.shared:
            kube.resource(_sedna(_plural(doc["kind"]))).create(NS, doc)
        datasets = kube.resource(_sedna("datasets"))
        jobs = kube.resource(_sedna(_plural(self.kind)))

        def create(i: int) -> None:
            ds = copy.deepcopy(self.dataset)
            ds["metadata"] = {"name": f"ds-{i:05d}"}
            datasets.create(NS, ds)
            job = copy.deepcopy(self.job)
            job["metadata"] = {"name": f"job-{i:05d}"}
            job["spec"]["dataset"]["name"] = ds["metadata"]["name"]
            jobs.create(NS, job)

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(create, range(count)))

    def done(self, kubeconfig: Path, count: int) -> int:
        from sedna.runtime.kube import PODS

        assert self.kube is not None
        prefix = f"{self.kind.lower()}.sedna.io/"
        pods = self.kube.resource(PODS).list(NS, label_selector=f"{prefix}worker-type=eval")
        return len({p["metadata"]["labels"][prefix + "name"] for p in pods["items"]})

    def stop(self) -> None:
        if self.kubelet is not None:
            self.kubelet.stop()
        if self.lc is not None:
            self.lc.close()


WORKLOADS: dict[str, Callable[[], Workload]] = {
    **{key: partial(PodJobs, kind) for key, kind in KINDS.items()},
    "ds": DatasetFanout,
    "il": partial(StagedJobs, "IncrementalLearningJob",
                  "incremental-learning/03-incremental-learning-job.yaml",
                  "incremental-learning/02-dataset.yaml", "incremental-learning/01-models.yaml"),
    "ll": partial(StagedJobs, "LifelongLearningJob",
                  "lifelong-learning/02-lifelong-learning-job.yaml",
                  "lifelong-learning/01-dataset.yaml"),
}  # fmt: skip
TITLES = {
    "ds": "Dataset (fan-out to a node's LC)",
    "il": "IncrementalLearningJob (scripted LC, to the eval worker)",
    "ll": "LifelongLearningJob (scripted LC, to the eval worker)",
}
JOBS = 200  # the setup: 200 jobs created by 4 threads
# Go's GM takes about 8 s a job to the eval worker (its 5 API requests per second): a
# Go round of these takes 2.5-3 minutes.
DEFAULT_JOBS = {"il": 20, "ll": 20}


# -- one round ------------------------------------------------------------------------


def idle_cpu(pid: int, seconds: float) -> float:
    before = cpu_seconds(pid)
    time.sleep(seconds)
    return 1000 * (cpu_seconds(pid) - before) / seconds  # ms/s


def one_round(gm: str, key: str, jobs: int, idle_s: float, go: Path) -> dict[str, float]:
    """One round of one GM on a fresh API server (the steps of the module's docstring)."""
    work = WORKLOADS[key]()
    with tempfile.TemporaryDirectory(prefix=f"vs-sedna-{key}-{gm}-") as tmp:
        folder = Path(tmp)
        api, kubeconfig = start_apiserver(folder)
        proc: Proc | None = None
        try:
            proc = start_ours(folder, kubeconfig) if gm == "ours" else start_go(
                folder, kubeconfig, go)  # fmt: skip
            work.start(kubeconfig, proc)
            time.sleep(2.0)  # caches synced and the start's own work done
            out = {"idle_cpu_ms_s": idle_cpu(proc.pid, idle_s),
                   "idle_rss_mb": memory_mb(proc.pid, "VmRSS")}  # fmt: skip
            cpu0, t0 = cpu_seconds(proc.pid), time.monotonic()
            creator = threading.Thread(target=work.create, args=(kubeconfig, jobs))
            creator.start()
            wait_for(
                lambda: work.done(kubeconfig, jobs) >= jobs,
                f"{jobs} {_name(key)} done by the {gm} GM",
                1800,
            )
            creator.join()
            out["wall_s"] = time.monotonic() - t0
            out["cpu_ms_per_job"] = 1000 * (cpu_seconds(proc.pid) - cpu0) / jobs
            out["peak_rss_mb"] = memory_mb(proc.pid, "VmHWM")
            time.sleep(2.0)
            out["idle_cpu_with_jobs_ms_s"] = idle_cpu(proc.pid, idle_s)
            return out
        finally:
            work.stop()
            if proc is not None:
                proc.stop()
            api.stop()


def summary(runs: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(runs), 2), "min": round(min(runs), 2),
            "max": round(max(runs), 2)}  # fmt: skip


def ratio(ours: float, go: float) -> float:
    """ours / go to 2 decimals, or 2 significant digits below 0.1 (wall: 0.0037, not 0.0)."""
    r = ours / go
    return round(r, 2) if r >= 0.1 else float(f"{r:.2g}")


def _name(key: str) -> str:
    return TITLES.get(key) or KINDS[key].name


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kinds", default=",".join(WORKLOADS))
    ap.add_argument(
        "--jobs",
        type=int,
        default=None,
        help=f"jobs of each kind (default {JOBS}; il, ll: {DEFAULT_JOBS['il']})",
    )
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--idle-seconds", type=float, default=20.0)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    go = go_gm_binary()
    if go is None:
        print("skipped: Sedna's Go GM not found (set SEDNA_GO_GM_BIN, or put sedna-bin "
              "beside the checkout)")  # fmt: skip
        return 0
    result: dict[str, Any] = {
        "jobs": args.jobs or JOBS,
        "rounds": args.rounds,
        "idle_seconds": args.idle_seconds,
        "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "load_average_at_start": round(os.getloadavg()[0], 2),
        "kinds": {},
    }
    for key in args.kinds.split(","):
        jobs = args.jobs or DEFAULT_JOBS.get(key, JOBS)
        runs: dict[str, list[dict[str, float]]] = {"go": [], "ours": []}
        for r in range(args.rounds):
            for gm in ("go", "ours"):  # in turns, never at once
                got = one_round(gm, key, jobs, args.idle_seconds, go)
                runs[gm].append(got)
                print(f"{_name(key)} round {r + 1} {gm}: "
                      + ", ".join(f"{k} {v:.2f}" for k, v in got.items()), flush=True)  # fmt: skip
        figures = {
            gm: {m: summary([run[m] for run in rs]) for m in rs[0]} for gm, rs in runs.items()
        }
        ratios = {
            m: ratio(figures["ours"][m]["median"], figures["go"][m]["median"])
            for m in figures["ours"]
            if figures["go"][m]["median"] > 0
        }
        result["kinds"][_name(key)] = {"jobs": jobs, "figures": figures,
                                       "ratio_ours_to_go": ratios}  # fmt: skip
        print(json.dumps({_name(key): {"ratio_ours_to_go": ratios}}, indent=2))
    result["load_average_at_end"] = round(os.getloadavg()[0], 2)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(
        f"recorded in {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
