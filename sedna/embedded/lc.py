"""A LocalController stand-in for one simulated edge node: Sedna's LC protocol, LC behaviour.

It dials the GM's websocket exactly as Sedna's Go LC does (`Node-Name` header, a
bare empty header frame first, JSON frames with base64 `content`) plus the bearer
token this GM asks for, and plays the LC's part of incremental learning after
`pkg/localcontroller/managers/incrementallearning` and `.../dataset`:

- keeps the jobs, datasets and models the GM inserts (and forgets deleted ones);
- simulates a growing dataset (`datasetGrowthPerSecond` new samples), polls it every
  `dataset_poll_seconds` and reports `numberOfSamples` when it changed, for datasets the
  GM sent it; each job splits the new samples into train and eval samples by its
  `trainProb` (absent: 0, as Sedna's typed spec reads it: such a job never trains);
- on Train/Waiting, when the train trigger holds on `num_of_samples`, reports
  train/ready with the base model (later rounds: the last trained model of the initial
  model's format), the round's data file and output dir;
- on Eval/Waiting reports eval/ready with the trained model of the eval model's format
  and the model to beat;
- on Deploy/Waiting evaluates the deploy trigger on the eval metrics and their deltas
  (lists: name an element, `precision_delta[0]`, see `triggers`), copies (names) the
  trained model to the deploy Model's URL and reports deploy/ready, or deploy/completed
  ("isn't need to deploy model") when the trigger does not hold;
- plays the worker's own report (train/eval completed, with models and metrics) when
  the simulated kubelet says a worker finished, as a Sedna worker POSTs to its LC.

Triggers, condition data, model matching by format and device, URL checks and data file
names follow Sedna's LC (`triggers`, `lc_conditions`). Where Sedna's LC panics (no
trained model of the wanted format, a metric the old model lacks) the job is left
waiting with a warning, which is what a crash-looping LC shows.

Differences from the Go LC, on purpose: it ticks every `tick_seconds` and polls datasets
every `dataset_poll_seconds` (Go: 10 s and 60 s; `embedded.simulate.jobTickSeconds` and
`datasetPollSeconds` set them, and the defaults keep the demo's first cycle within
seconds); a status is reported once per job condition (Go re-arms its trigger flags on
every tick and relies on emptied sample lists); the dial is retried every
`reconnect_seconds` (Go: every 5 s, also without end); no files are written (data files
and model copies are only named); a `metric[i]` Sedna would panic on leaves the job
waiting. When the GM has not sent a dataset or model that a job names (the Go GM's
separate dataset controller may not be running), it is read from the API instead.

Only public interfaces are used: the websocket and, for those fallbacks, the API.
"""

from __future__ import annotations

import base64
import copy
import json
import posixpath
import ssl
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from loguru import logger
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException
from websockets.sync.client import ClientConnection, connect

from sedna.embedded.kubelet import worker_type
from sedna.embedded.lc_conditions import (
    LCPanic,
    UnsupportedURL,
    cond_models,
    deploy_stats,
    eval_result,
    pick_model,
    url_is_local,
)
from sedna.embedded.scheduler import Scheduler
from sedna.embedded.triggers import TriggerError, build_trigger
from sedna.runtime.clock import Clock, RealClock
from sedna.runtime.kube import DATASETS, MODELS, ApiError, KubeClient

IL_KIND = "incrementallearningjob"
HELLO_FRAME = '{"namespace":"","resourceKind":"","resourceName":"","operation":""}'
OUTBOX_LIMIT = 1000
WORKER_REPORT_RETRIES = 20
DATASET_LOOKUP_SECONDS = 5.0

# What the simulated eval worker measures: the retrained model against the deployed one.
NEW_MODEL_METRICS: dict[str, list[float]] = {"precision": [0.79], "recall": [0.71]}
OLD_MODEL_METRICS: dict[str, list[float]] = {"precision": [0.62], "recall": [0.58]}


def encode_message(namespace: str, kind: str, name: str, operation: str, payload: Any) -> str:
    """One frame as the Go LC's WriteJSON of `Message{Header, Content []byte}` writes it."""
    content = base64.b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode()
    header = {
        "namespace": namespace,
        "resourceKind": kind,
        "resourceName": name,
        "operation": operation,
    }
    return json.dumps({"header": header, "content": content}, separators=(",", ":"))


def decode_message(frame: str | bytes) -> tuple[dict[str, str], Any]:
    """Header and decoded JSON payload of one GM frame; ValueError if it is not one."""
    doc = json.loads(frame)
    if not isinstance(doc, dict) or not isinstance(doc.get("header"), dict):
        raise ValueError("frame has no header")
    header = {k: str(v) for k, v in doc["header"].items()}
    raw = base64.b64decode(doc.get("content") or "", validate=True)
    return header, json.loads(raw) if raw else None


def _latest(job: Mapping[str, Any]) -> tuple[str, str, str]:
    """(identity, stage, type) of the job's latest condition.

    The identity (stage, type and transition time) tells one Train/Waiting from the
    next cycle's even when the GM trims old conditions and the list length stays put.
    """
    conds = (job.get("status") or {}).get("conditions") or []
    if not conds:
        return "", "", ""
    last = conds[-1]
    stage, ctype = str(last.get("stage") or ""), str(last.get("type") or "")
    return f"{stage}/{ctype}@{last.get('lastTransitionTime') or ''}", stage, ctype


def _cond_input(job: Mapping[str, Any], stage: str, ctype: str) -> dict[str, Any]:
    conds = (job.get("status") or {}).get("conditions") or []
    for cond in reversed(conds):
        if cond.get("stage") == stage and cond.get("type") == ctype:
            try:
                data = json.loads(cond.get("data") or "{}")
            except ValueError:
                continue
            if isinstance(data, dict) and isinstance(data.get("input"), dict):
                return dict(data["input"])
    return {}


def _model_ref(model_obj: Mapping[str, Any]) -> dict[str, Any]:
    spec = model_obj.get("spec") or {}
    ref: dict[str, Any] = {"format": spec.get("format", ""), "url": spec.get("url", "")}
    if spec.get("devices"):
        ref["device_soc_versions"] = list(spec["devices"])
    return ref


class LCPlay(Protocol):
    """One feature's part of the LC protocol, played by the simulated LC.

    The simulated LC keeps the connection, datasets and models, and plays incremental
    learning itself; any other feature plugs in a play (see `sedna.embedded.plays`).
    Every method runs on the LC's scheduler thread, so a play needs no locks; it
    reports upstream with `lc.report(...)`.
    """

    #: lower-case `resourceKind` values this play takes downstream
    kinds: tuple[str, ...]

    def on_insert(
        self, lc: SimulatedLC, kind: str, namespace: str, name: str, obj: dict[str, Any]
    ) -> None:
        """The GM inserted (or re-sent) an object of one of `kinds`."""

    def on_delete(self, lc: SimulatedLC, kind: str, namespace: str, name: str) -> None:
        """The GM deleted an object of one of `kinds`."""

    def on_tick(self, lc: SimulatedLC) -> None:
        """Called every `lc.tick_seconds`: report what the LC would report now."""

    def on_worker_finished(self, lc: SimulatedLC, pod: dict[str, Any]) -> bool:
        """A worker pod on this node exited; report as its worker would. True if handled."""
        return False


@dataclass
class _Dataset:
    obj: dict[str, Any]
    first_seen: float
    from_gm: bool
    reported: int = 0  # Sedna reports a count only once it differs from the last one (0 first)
    polled: int = 0  # the count as of the last poll: what the jobs see
    next_poll: float = 0.0


@dataclass
class _Job:
    namespace: str
    name: str
    kind: str
    obj: dict[str, Any]
    rounds: int = 0
    previous_numbers: int = 0
    train_samples: int = 0
    eval_samples: int = 0
    reported: str = ""  # identity of the condition last answered (see `_latest`)
    warned: set[str] = field(default_factory=set)
    next_lookup: float = 0.0  # when to ask the API again for a missing dataset

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def spec(self) -> dict[str, Any]:
        return dict(self.obj.get("spec") or {})

    @property
    def obj_conditions(self) -> list[dict[str, Any]]:
        conds = (self.obj.get("status") or {}).get("conditions") or []
        return [c for c in conds if isinstance(c, dict)]


def _train_prob(job: _Job) -> float:
    """spec.dataset.trainProb as Sedna's typed float64 holds it: 0 when absent."""
    raw = (job.spec.get("dataset") or {}).get("trainProb")
    if raw is None:
        return 0.0
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise TriggerError(f"spec.dataset.trainProb: expected a number, got {raw!r}")
    return float(raw)


def _copy(src: Mapping[str, Any], dst: Mapping[str, Any]) -> bool:
    """Whether Sedna's Storage.CopyFile gets past the URLs (the files themselves are simulated)."""
    try:
        url_is_local(str(src.get("url") or ""))
        url_is_local(str(dst.get("url") or ""))
    except UnsupportedURL:
        return False
    return True


class SimulatedLC:
    """The LC of one simulated node; all state changes happen on its scheduler thread."""

    def __init__(
        self,
        node: str,
        gm_url: str,
        *,
        token: str | None = None,
        kube: KubeClient | None = None,
        growth_per_second: float = 20.0,
        tick_seconds: float = 0.5,
        dataset_poll_seconds: float = 1.0,
        reconnect_seconds: float = 1.0,
        ssl_context: ssl.SSLContext | None = None,
        clock: Clock | None = None,
        plays: Sequence[LCPlay] = (),
    ) -> None:
        self.node = node
        self.gm_url = gm_url
        self.token = token
        self.kube = kube
        self.growth = growth_per_second
        self.tick_seconds = tick_seconds
        self.dataset_poll_seconds = dataset_poll_seconds
        self.reconnect_seconds = reconnect_seconds
        self.ssl_context = ssl_context
        self.clock: Clock = clock or RealClock()
        self.scheduler = Scheduler(f"{node}/lc", self.clock)
        self.jobs: dict[str, _Job] = {}
        self.datasets: dict[str, _Dataset] = {}
        self.models: dict[str, dict[str, Any]] = {}
        self.connected = threading.Event()
        # The latest statuses written, for tests and debugging.
        self.sent: deque[tuple[dict[str, str], Any]] = deque(maxlen=OUTBOX_LIMIT)
        self._ws: ClientConnection | None = None
        self._send_lock = threading.Lock()
        self._outbox: deque[str] = deque(maxlen=OUTBOX_LIMIT)
        self._stop = threading.Event()
        self._halted = False
        self._thread: threading.Thread | None = None
        self._warned_ops: set[str] = set()
        self.plays: list[LCPlay] = list(plays)
        self._play_of: dict[str, LCPlay] = {k: p for p in self.plays for k in p.kinds}

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        self.scheduler.start()
        self.scheduler.call_later(self.tick_seconds, self._tick)
        self._thread = threading.Thread(
            target=self._connection_loop, name=f"{self.node}/lc-ws", daemon=True
        )
        self._thread.start()

    def request_stop(self) -> None:
        """Stop reporting; safe in a signal handler (no lock, no I/O: `stop()` closes)."""
        self._halted = True
        self.scheduler.request_stop()

    def stop(self) -> None:
        self.request_stop()
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self.scheduler.stop()

    # -- the websocket -----------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        headers = {"Node-Name": self.node}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def _connection_loop(self) -> None:
        failures = 0
        while not self._stop.is_set() and not self._halted:
            try:
                ws = connect(
                    self.gm_url,
                    additional_headers=self._headers(),
                    open_timeout=5,
                    close_timeout=2,
                    max_size=None,
                    ssl=self.ssl_context,
                )
            except InvalidStatus as exc:
                status = exc.response.status_code
                if failures == 0 or failures % 30 == 0:
                    logger.warning("{}/lc: GM refused the connection (HTTP {})", self.node, status)
                failures += 1
                self._stop.wait(self.reconnect_seconds)
                continue
            except (OSError, WebSocketException, TimeoutError) as exc:
                if failures == 0 or failures % 30 == 0:
                    logger.info(
                        "{}/lc: GM not reachable at {} ({}), retrying",
                        self.node,
                        self.gm_url,
                        type(exc).__name__,
                    )
                failures += 1
                self._stop.wait(self.reconnect_seconds)
                continue
            failures = 0
            with ws:
                self._serve(ws)
            if not self._stop.is_set() and not self._halted:
                logger.info("{}/lc: connection to GM lost, reconnecting", self.node)
                self._stop.wait(self.reconnect_seconds)

    def _serve(self, ws: ClientConnection) -> None:
        """Say hello, flush what was queued, then hand every frame to the scheduler."""
        self._ws = ws
        try:
            with self._send_lock:
                ws.send(HELLO_FRAME)
                while self._outbox:
                    ws.send(self._outbox[0])
                    self._outbox.popleft()
            self.connected.set()
            logger.info("{}/lc: connected to GM at {}", self.node, self.gm_url)
            while not self._halted and not self._stop.is_set():
                try:
                    frame = ws.recv(timeout=0.5)
                except TimeoutError:
                    continue
                self._on_frame(frame)
        except (ConnectionClosed, OSError):
            pass
        finally:
            self.connected.clear()
            self._ws = None

    def _on_frame(self, frame: str | bytes) -> None:
        try:
            header, payload = decode_message(frame)
        except (ValueError, TypeError) as exc:
            logger.warning("{}/lc: undecodable frame from GM: {}", self.node, exc)
            return
        self.scheduler.call_soon(lambda: self._downstream(header, payload))

    def report(self, namespace: str, kind: str, name: str, payload: Any) -> None:
        """Send one status upstream (for plays); queued while disconnected."""
        self._write(namespace, kind, name, payload)

    def _write(self, namespace: str, kind: str, name: str, payload: Any) -> None:
        """Send one status upstream; queued while disconnected (the GM may be restarting)."""
        frame = encode_message(namespace, kind, name, "status", payload)
        self.sent.append(
            ({"namespace": namespace, "resourceKind": kind, "resourceName": name}, payload)
        )
        with self._send_lock:
            ws = self._ws
            if ws is not None and not self._outbox:
                try:
                    ws.send(frame)
                    return
                except (ConnectionClosed, OSError):
                    pass
            self._outbox.append(frame)

    # -- downstream --------------------------------------------------------------------

    def _downstream(self, header: Mapping[str, str], obj: Any) -> None:
        op = header.get("operation", "")
        kind = header.get("resourceKind", "").lower()
        ns, name = header.get("namespace", ""), header.get("resourceName", "")
        key = f"{ns}/{name}"
        play = self._play_of.get(kind)
        if play is not None and op == "delete":
            play.on_delete(self, kind, ns, name)
            return
        if op == "delete":
            forgotten = self.jobs.pop(key, None) if kind == IL_KIND else None
            if kind == "dataset":
                self.datasets.pop(key, None)
            elif kind == "model":
                self.models.pop(key, None)
            if forgotten is not None or kind != IL_KIND:
                logger.info("{}/lc: {} {} deleted", self.node, kind, key)
            return
        if op != "insert":
            # Sedna's Go LC knows only insert and delete; do as it does.
            if op not in self._warned_ops:
                self._warned_ops.add(op)
                logger.warning(
                    "{}/lc: unknown operation {!r} ignored (as the Go LC does)", self.node, op
                )
            return
        if not isinstance(obj, dict):
            logger.warning("{}/lc: {} {} has no object payload", self.node, kind, key)
            return
        if play is not None:
            play.on_insert(self, kind, ns, name, obj)
        elif kind == "dataset":
            known = self.datasets.get(key)
            if known is None:
                self.datasets[key] = self._new_dataset(obj, from_gm=True)
                logger.info(
                    "{}/lc: dataset {} received, simulating {:g} new samples/s",
                    self.node,
                    key,
                    self.growth,
                )
            else:
                known.obj, known.from_gm = obj, True
        elif kind == "model":
            if key not in self.models:
                logger.info("{}/lc: model {} received", self.node, key)
            self.models[key] = obj
        elif kind == IL_KIND:
            job = self.jobs.get(key)
            if job is None:
                job = _Job(ns, name, kind, obj)
                self.jobs[key] = job
                _, stage, ctype = _latest(obj)
                logger.info(
                    "{}/lc: job {} received ({} {})", self.node, key, stage or "-", ctype or "-"
                )
            else:
                job.obj = obj
        else:
            logger.debug("{}/lc: {} {} received (not simulated)", self.node, kind, key)

    # -- lookups (GM-sent first, the API as a fallback) ----------------------------------

    def _api_get(self, res: Any, namespace: str, name: str) -> dict[str, Any] | None:
        if self.kube is None:
            return None
        try:
            return self.kube.resource(res).get(namespace, name)
        except ApiError:
            return None

    def _new_dataset(self, obj: dict[str, Any], *, from_gm: bool) -> _Dataset:
        """A dataset polled at once, as Sedna's monitor reads its file on insert (0 so far)."""
        now = self.clock.now()
        return _Dataset(obj, now, from_gm=from_gm, next_poll=now + self.dataset_poll_seconds)

    def _dataset(self, job: _Job) -> _Dataset | None:
        name = str((job.spec.get("dataset") or {}).get("name") or "")
        key = f"{job.namespace}/{name}"
        ds = self.datasets.get(key)
        if ds is None and name and self.clock.now() >= job.next_lookup:
            job.next_lookup = self.clock.now() + DATASET_LOOKUP_SECONDS
            obj = self._api_get(DATASETS, job.namespace, name)
            if obj is not None:
                ds = self._new_dataset(obj, from_gm=False)
                self.datasets[key] = ds
                logger.info(
                    "{}/lc: dataset {} read from the API, simulating {:g} new samples/s",
                    self.node,
                    key,
                    self.growth,
                )
        return ds

    def _model(self, namespace: str, name: str) -> dict[str, Any] | None:
        if not name:
            return None
        key = f"{namespace}/{name}"
        obj = self.models.get(key)
        if obj is None:
            obj = self._api_get(MODELS, namespace, name)
            if obj is not None:
                self.models[key] = obj
        return _model_ref(obj) if obj is not None else None

    def _train_model(self, job: _Job) -> dict[str, Any] | None:
        return self._model(
            job.namespace, str((job.spec.get("initialModel") or {}).get("name") or "")
        )

    def _deploy_model(self, job: _Job) -> dict[str, Any] | None:
        deploy = (job.spec.get("deploySpec") or {}).get("model") or {}
        return self._model(job.namespace, str(deploy.get("name") or ""))

    def _eval_model(self, job: _Job) -> dict[str, Any] | None:
        # Sedna's EvalSpec.InitialModel is serialized as `initialEvalModel`.
        initial = (job.spec.get("evalSpec") or {}).get("initialEvalModel") or {}
        if initial.get("name"):
            return self._model(job.namespace, str(initial["name"]))
        return self._deploy_model(job)

    def samples(self, ds: _Dataset) -> int:
        """The simulated dataset's sample count now."""
        return int(self.growth * max(0.0, self.clock.now() - ds.first_seen))

    # -- the job loop ------------------------------------------------------------------

    def _tick(self) -> None:
        try:
            now = self.clock.now()
            for ds_key, ds in list(self.datasets.items()):
                if now >= ds.next_poll:
                    ds.next_poll = now + self.dataset_poll_seconds
                    self._poll_dataset(ds_key, ds)
            for job in list(self.jobs.values()):
                try:
                    self._step(job)
                except TriggerError as exc:
                    self._warn_once(job, str(exc), f"job {job.key}: {exc}; the job waits")
                except LCPanic as exc:
                    self._warn_once(
                        job, str(exc), f"job {job.key}: {exc}: Sedna's LC panics here; it waits"
                    )
                except UnsupportedURL as exc:
                    self._warn_once(
                        job, str(exc), f"job {job.key}: {exc}: Sedna's LC cannot run it; it waits"
                    )
                except Exception as exc:  # a bad job must not stop the others, nor flood
                    self._warn_once(job, repr(exc), f"job {job.key}: simulation failed: {exc!r}")
            for play in self.plays:
                try:
                    play.on_tick(self)
                except Exception as exc:  # one play's fault must not stop the others
                    self.warn_once(
                        f"tick:{type(play).__name__}:{exc!r}",
                        f"{type(play).__name__} failed: {exc!r}",
                    )
        finally:
            if not self._halted:
                self.scheduler.call_later(self.tick_seconds, self._tick)

    def _poll_dataset(self, key: str, ds: _Dataset) -> None:
        """Sedna's monitorDataSources: read the count, report it when it changed."""
        ds.polled = self.samples(ds)
        if ds.from_gm and ds.polled != ds.reported:
            ns, _, name = key.partition("/")
            self._write(ns, "dataset", name, {"numberOfSamples": ds.polled})
            ds.reported = ds.polled

    def warn_once(self, tag: str, text: str) -> None:
        """Log `text` once per `tag` for this LC (for plays: no flood on every tick)."""
        if tag not in self._warned_ops:
            self._warned_ops.add(tag)
            logger.warning("{}/lc: {}", self.node, text)

    def _warn_once(self, job: _Job, tag: str, text: str) -> None:
        if tag not in job.warned:
            job.warned.add(tag)
            logger.warning("{}/lc: {}", self.node, text)

    def _step(self, job: _Job) -> None:
        url_is_local(str(job.spec.get("outputDir") or ""))  # Sedna's initJob refuses others
        ds = self._dataset(job)
        if ds is None:
            self._warn_once(job, "dataset", f"job {job.key}: dataset not found yet, waiting")
            return
        # Sedna's dataset manager refuses a URL it cannot read; the job then never has data.
        url_is_local(str((ds.obj.get("spec") or {}).get("url") or ""))
        current = ds.polled
        if current > job.previous_numbers:
            new = current - job.previous_numbers
            prob = _train_prob(job)
            train = int(prob * new)
            if not 0 <= train <= new:  # Sedna slices its sample list past its end
                raise LCPanic(f"spec.dataset.trainProb {prob:g}: {train} of {new} new samples")
            job.train_samples += train
            job.eval_samples += new - train
            job.previous_numbers = current
        index, stage, ctype = _latest(job.obj)
        if ctype != "Waiting" or index == job.reported:
            return
        if stage == "Train":
            self._train_ready(job, index, ds)
        elif stage == "Eval":
            self._eval_ready(job, index, ds)
        elif stage == "Deploy":
            self._deploy(job, index)

    def _report(
        self,
        job: _Job,
        index: str,
        phase: str,
        status: str,
        input_: dict[str, Any] | None = None,
        output: dict[str, Any] | None = None,
    ) -> None:
        payload: dict[str, Any] = {"phase": phase, "status": status}
        if input_ is not None:
            payload["input"] = input_
        payload["output"] = output
        self._write(job.namespace, job.kind, job.name, payload)
        if index:
            job.reported = index

    def _output_dir(self, job: _Job) -> str:
        return str(job.spec.get("outputDir") or "").rstrip("/")

    def _data_file(self, job: _Job, which: str, ds: _Dataset, rounds: int) -> tuple[str, str]:
        """Sedna's createFile: the round's samples file, and an index file for remote data.

        Sedna writes a file only for a `txt` dataset (`csv` gets an empty path that it
        fails to create): anything else raises UnsupportedURL and the job waits.
        """
        spec = ds.obj.get("spec") or {}
        fmt = spec.get("format")
        if fmt != "txt":
            raise UnsupportedURL(f"dataset format {fmt!r}: Sedna's LC writes 'txt' samples only")
        sub = f"{self._output_dir(job)}/data/{which}/{rounds}"
        if url_is_local(str(spec.get("url") or "")):
            return posixpath.normpath(posixpath.join(sub, "data.txt")), ""
        return f"{sub}/data.txt", f"{sub}/dataIndex.txt"

    def _train_ready(self, job: _Job, index: str, ds: _Dataset) -> None:
        base = self._train_model(job)
        if base is None:
            self._warn_once(job, "initial-model", f"job {job.key}: initial model not found yet")
            return
        trigger = build_trigger(
            (job.spec.get("trainSpec") or {}).get("trigger"), field="spec.trainSpec.trigger"
        )
        stats = {"num_of_samples": job.train_samples}
        if not trigger(stats):
            return
        rounds = job.rounds + 1
        model = base
        if rounds > 1:
            # Later rounds train on from the last trained model of the initial model's format.
            trained = cond_models(job.obj_conditions, "Train", "Completed", "output")
            model = pick_model(trained, base)
            if model is None:
                raise LCPanic(f"no trained model of format {base.get('format')!r} to train on")
        data_url, index_url = self._data_file(job, "train", ds, rounds)
        job.rounds = rounds
        input_: dict[str, Any] = {"models": [model], "dataURL": data_url}
        if index_url:
            input_["dataIndexURL"] = index_url
        input_["outputDir"] = f"{self._output_dir(job)}/train/{job.rounds}"
        logger.info(
            "{}/lc: job {}: {} train samples, trigger holds: train/ready (round {})",
            self.node,
            job.key,
            job.train_samples,
            job.rounds,
        )
        job.train_samples = 0
        self._report(job, index, "train", "ready", input_)

    def _eval_ready(self, job: _Job, index: str, ds: _Dataset) -> None:
        if self._deploy_model(job) is None:
            self._warn_once(job, "deploy-model", f"job {job.key}: deploy model not found yet")
            return
        eval_model = self._eval_model(job)
        if eval_model is None:
            self._warn_once(job, "eval-model", f"job {job.key}: eval model not found yet")
            return
        trained = pick_model(
            cond_models(job.obj_conditions, "Train", "Completed", "output"), eval_model
        )
        if trained is None:
            raise LCPanic(f"no trained model of format {eval_model.get('format')!r} to evaluate")
        data_url, index_url = self._data_file(job, "eval", ds, max(job.rounds, 1))
        job.rounds = max(job.rounds, 1)
        input_: dict[str, Any] = {"models": [trained, eval_model], "dataURL": data_url}
        if index_url:
            input_["dataIndexURL"] = index_url
        logger.info(
            "{}/lc: job {}: {} eval samples: eval/ready", self.node, job.key, job.eval_samples
        )
        job.eval_samples = 0
        self._report(job, index, "eval", "ready", input_)

    def _deploy(self, job: _Job, index: str) -> None:
        deploy_model = self._deploy_model(job)
        if deploy_model is None:
            self._warn_once(job, "deploy-model", f"job {job.key}: deploy model not found yet")
            return
        conds = job.obj_conditions
        results = eval_result(conds)
        trigger = build_trigger(
            (job.spec.get("deploySpec") or {}).get("trigger"), field="spec.deploySpec.trigger"
        )
        if results is None or len(results) != 2:
            why = f"expected 2 evaluation results, got {len(results or [])}"
        else:
            stats = deploy_stats(results[0], results[1])
            if trigger(stats):
                self._deploy_ready(job, index, deploy_model, stats)
                return
            why = "deploy trigger not met"
        logger.info(
            "{}/lc: job {}: {}: isn't need to deploy model, deploy/completed",
            self.node,
            job.key,
            why,
        )
        self._report(job, index, "deploy", "completed")

    def _deploy_ready(
        self, job: _Job, index: str, deploy_model: dict[str, Any], stats: Mapping[str, Any]
    ) -> None:
        """Sedna's deployTask once the trigger holds: copy the model, report deploy/ready.

        Sedna copies the trained model to the deploy Model's URL as it stands (the
        trained model's local path gets the LC's ROOTFS_MOUNT_DIR prefix, the deploy
        URL does not), then the evaluated model to the eval model's URL. A failed first
        copy reports deploy/failed; a failed second one reports nothing and is retried.
        """
        trained_models = cond_models(job.obj_conditions, "Train", "Completed", "output")
        trained = pick_model(trained_models, deploy_model)
        if trained is None:
            raise LCPanic(f"no trained model of format {deploy_model.get('format')!r} to deploy")
        status = "ready"
        hot = bool(((job.spec.get("deploySpec") or {}).get("model") or {}).get("hotUpdateEnabled"))
        if not hot:
            status = "ready" if _copy(trained, deploy_model) else "failed"
            eval_model = self._eval_model(job)
            if eval_model is not None:
                new_eval = pick_model(trained_models, eval_model)
                if new_eval is None:
                    raise LCPanic(f"no trained model of format {eval_model.get('format')!r}")
                if not _copy(new_eval, eval_model):
                    raise UnsupportedURL(
                        f"cannot copy {new_eval.get('url')!r} to {eval_model.get('url')!r}"
                    )
            logger.info(
                "{}/lc: job {}: copy trained model (url={}) to the deploy model (url={}): {}",
                self.node,
                job.key,
                trained.get("url"),
                deploy_model.get("url"),
                "done" if status == "ready" else "failed",
            )
        shown = {k: [round(x, 4) for x in v] for k, v in stats.items() if k.endswith("_delta")}
        logger.info(
            "{}/lc: job {}: deploy trigger holds ({}): deploy/{}",
            self.node,
            job.key,
            shown,
            status,
        )
        self._report(job, index, "deploy", status, {"models": [trained, deploy_model]})

    # -- the worker's report -----------------------------------------------------------

    def worker_finished(self, pod: Mapping[str, Any]) -> None:
        """What a Sedna train/eval worker POSTs to its LC before it exits (thread-safe)."""
        copied = copy.deepcopy(dict(pod))
        self.scheduler.call_soon(lambda: self._worker_report(copied, 0))

    def _worker_report(self, pod: dict[str, Any], attempt: int) -> None:
        for play in self.plays:
            if play.on_worker_finished(self, pod):
                return
        meta = pod.get("metadata") or {}
        ns = str(meta.get("namespace") or "")
        owner = next((r for r in meta.get("ownerReferences") or [] if r.get("controller")), None)
        kind = worker_type(pod)
        if owner is None or kind not in ("train", "eval"):
            return
        key = f"{ns}/{owner.get('name')}"
        job = self.jobs.get(key)
        if job is None or str(owner.get("kind") or "").lower() != job.kind:
            if attempt < WORKER_REPORT_RETRIES:
                # The GM may not have (re)sent the job yet, e.g. right after a restart.
                self.scheduler.call_later(0.5, lambda: self._worker_report(pod, attempt + 1))
            else:
                logger.warning(
                    "{}/lc: worker {} reports for unknown job {}; dropped",
                    self.node,
                    meta.get("name"),
                    key,
                )
            return
        _, stage, _ = _latest(job.obj)
        if stage.lower() != kind:
            # A worker of a stage the job has left (e.g. one that finished while the GM
            # was down): a real worker reports once, right away; this one is stale.
            logger.info(
                "{}/lc: worker {} of job {}: {} report dropped, the job is in stage {}",
                self.node, meta.get("name"), job.key, kind, stage or "-",
            )  # fmt: skip
            return
        if kind == "train":
            out = _cond_input(job.obj, "Train", "Ready").get("outputDir") or (
                f"{self._output_dir(job)}/train/{max(job.rounds, 1)}"
            )
            formats: list[str] = []
            for m in (self._train_model(job), self._deploy_model(job), self._eval_model(job)):
                fmt = str((m or {}).get("format") or "")
                if fmt and fmt not in formats:
                    formats.append(fmt)
            results: list[dict[str, Any]] = [
                {"format": fmt, "url": f"{out}/model.{fmt}"} for fmt in formats or ["pb"]
            ]
        else:
            inputs = cond_models(job.obj_conditions, "Eval", "Ready", "input") or []
            results = []
            for i, m in enumerate(inputs):
                metrics = NEW_MODEL_METRICS if i == 0 else OLD_MODEL_METRICS
                results.append(
                    {
                        "format": m.get("format", ""),
                        "url": m.get("url", ""),
                        "metrics": copy.deepcopy(metrics),
                    }
                )
        logger.info(
            "{}/lc: worker {} of job {}: {}/completed ({} model(s))",
            self.node,
            meta.get("name"),
            job.key,
            kind,
            len(results),
        )
        self._report(job, "", kind, "completed", output={"models": results, "ownerInfo": None})
