"""The simulated LC's part of lifelong learning, after Sedna's
`pkg/localcontroller/managers/lifelonglearning`.

- keeps the LifelongLearningJobs the GM inserts (and forgets deleted ones);
- grows the job's Dataset as the LC does for incremental learning (the Dataset comes
  from the GM's dataset feature, or is read from the API when the GM sends none) and
  splits the new samples into train and eval samples by `spec.dataset.trainProb`;
- on Train/Waiting, when `spec.trainSpec.trigger` holds on `num_of_samples`, reports
  train/ready with the round's data file and output dir (no model: the train worker
  builds on the cloud knowledge base, `CLOUD_KB_INDEX`);
- on Eval/Waiting reports eval/ready with the models of the latest Train/Completed;
- on Deploy/Waiting copies the evaluated model to `<outputDir>/deploy/index.pkl` (the
  copy is only named) and reports deploy/ready, or deploy/completed without a model;
- plays the worker's report when a train/eval worker exits: the knowledge base it
  produced (one task per round, its metric, classes and labeled samples), from which
  the GM rebuilds `status.knowledgeBase`.

Differences from the Go LC, on purpose: a status is reported once per job condition
(Go re-arms its trigger flags each Train/Waiting and relies on emptied sample lists);
Eval/Waiting without a trained model is answered eval/failed (Go writes a `null`
report the GM cannot read, and the job waits forever); no file is written.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from loguru import logger

from sedna.embedded.kubelet import worker_type
from sedna.embedded.lc import SimulatedLC, _cond_input, _latest
from sedna.embedded.lc_conditions import cond_models, url_is_local
from sedna.embedded.triggers import TriggerError, build_trigger
from sedna.runtime.kube import DATASETS, ApiError

LL_KIND = "lifelonglearningjob"
OWNER_KIND = "LifelongLearningJob"
DATASET_LOOKUP_SECONDS = 5.0
WORKER_REPORT_RETRIES = 20
CLASSES = ["cooler", "no change", "warmer"]  # ATCII's thermal preference classes
METRIC = "precision_score"
KB_INDEX = "index.pkl"
DEPLOY_MODEL = "deploy/index.pkl"


@dataclass
class _Job:
    namespace: str
    name: str
    obj: dict[str, Any]
    rounds: int = 0
    previous_numbers: int = 0
    train_samples: int = 0
    eval_samples: int = 0
    round_samples: int = 0  # the train samples of the current round, for the KB
    reported: str = ""  # identity of the condition last answered (see `lc._latest`)
    warned: set[str] = field(default_factory=set)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def spec(self) -> dict[str, Any]:
        spec = self.obj.get("spec")
        return spec if isinstance(spec, dict) else {}

    @property
    def output_dir(self) -> str:
        return str(self.spec.get("outputDir") or "").rstrip("/")


class LifelongLearningPlay:
    """One node's LL jobs; every method runs on the LC's scheduler thread."""

    kinds: tuple[str, ...] = (LL_KIND,)

    def __init__(self) -> None:
        self.jobs: dict[str, _Job] = {}
        self._api_datasets: dict[str, float] = {}  # key -> first seen, for API-read ones
        self._next_lookup: dict[str, float] = {}

    # -- downstream --------------------------------------------------------------------

    def on_insert(
        self, lc: SimulatedLC, kind: str, namespace: str, name: str, obj: dict[str, Any]
    ) -> None:
        key = f"{namespace}/{name}"
        job = self.jobs.get(key)
        if job is None:
            self.jobs[key] = _Job(namespace, name, obj)
            _, stage, ctype = _latest(obj)
            logger.info(
                "{}/lc: lifelong learning job {} received ({} {})",
                lc.node, key, stage or "-", ctype or "-",
            )  # fmt: skip
        else:
            job.obj = obj

    def on_delete(self, lc: SimulatedLC, kind: str, namespace: str, name: str) -> None:
        if self.jobs.pop(f"{namespace}/{name}", None) is not None:
            logger.info("{}/lc: lifelong learning job {}/{} deleted", lc.node, namespace, name)

    # -- the job loop ------------------------------------------------------------------

    def on_tick(self, lc: SimulatedLC) -> None:
        for job in list(self.jobs.values()):
            try:
                self._step(lc, job)
            except TriggerError as exc:
                self._warn_once(lc, job, str(exc), f"job {job.key}: {exc}")
            except Exception as exc:  # one bad job must not stop the others, nor flood
                self._warn_once(lc, job, repr(exc), f"job {job.key}: simulation failed: {exc!r}")

    def _warn_once(self, lc: SimulatedLC, job: _Job, tag: str, text: str) -> None:
        if tag not in job.warned:
            job.warned.add(tag)
            logger.warning("{}/lc: lifelong learning {}", lc.node, text)

    def _samples(self, lc: SimulatedLC, job: _Job) -> int | None:
        """The job's Dataset's sample count as last polled; None while the LC has none."""
        name = str((job.spec.get("dataset") or {}).get("name") or "")
        key = f"{job.namespace}/{name}"
        ds = lc.datasets.get(key)
        if ds is not None:
            return ds.polled
        first_seen = self._api_datasets.get(key)
        if first_seen is None and name and lc.kube is not None:
            if lc.clock.now() < self._next_lookup.get(key, 0.0):
                return None
            self._next_lookup[key] = lc.clock.now() + DATASET_LOOKUP_SECONDS
            try:
                lc.kube.resource(DATASETS).get(job.namespace, name)
            except ApiError:
                return None
            first_seen = self._api_datasets[key] = lc.clock.now()
        if first_seen is None:
            return None
        return int(lc.growth * max(0.0, lc.clock.now() - first_seen))

    def _step(self, lc: SimulatedLC, job: _Job) -> None:
        current = self._samples(lc, job)
        if current is None:
            self._warn_once(lc, job, "dataset", f"job {job.key}: dataset not found yet, waiting")
            return
        if current > job.previous_numbers:
            new = current - job.previous_numbers
            prob = float((job.spec.get("dataset") or {}).get("trainProb") or 0.0)
            train = int(prob * new)
            job.train_samples += train
            job.eval_samples += new - train
            job.previous_numbers = current
        identity, stage, ctype = _latest(job.obj)
        if ctype != "Waiting" or identity == job.reported:
            return
        if stage == "Train":
            self._train_ready(lc, job, identity)
        elif stage == "Eval":
            self._eval_ready(lc, job, identity)
        elif stage == "Deploy":
            self._deploy(lc, job, identity)

    def _report(
        self,
        lc: SimulatedLC,
        job: _Job,
        identity: str,
        phase: str,
        status: str,
        *,
        input_: dict[str, Any] | None = None,
        output: dict[str, Any] | None = None,
    ) -> None:
        payload: dict[str, Any] = {"phase": phase, "status": status}
        if input_ is not None:
            payload["input"] = input_
        if output is not None:
            payload["output"] = output
        lc.report(job.namespace, LL_KIND, job.name, payload)
        if identity:
            job.reported = identity

    def _data_input(self, job: _Job, which: str) -> dict[str, Any]:
        """The round's data file (and index for remote storage) and the stage's output dir."""
        out = job.output_dir
        sub = f"{out}/data/{which}/{job.rounds}"
        input_: dict[str, Any] = {"dataURL": f"{sub}/data.txt"}
        if not url_is_local(out):
            input_["dataIndexURL"] = f"{sub}/dataIndex.txt"
        input_["outputDir"] = f"{out}/{which}/{job.rounds}"
        return input_

    def _train_ready(self, lc: SimulatedLC, job: _Job, identity: str) -> None:
        trigger = build_trigger(
            (job.spec.get("trainSpec") or {}).get("trigger"), field="spec.trainSpec.trigger"
        )
        if not trigger({"num_of_samples": job.train_samples}):
            return
        job.rounds += 1
        job.round_samples = job.train_samples
        logger.info(
            "{}/lc: lifelong learning job {}: {} train samples, trigger holds: train/ready "
            "(round {})",
            lc.node, job.key, job.train_samples, job.rounds,
        )  # fmt: skip
        job.train_samples = 0
        self._report(lc, job, identity, "train", "ready", input_=self._data_input(job, "train"))

    def _eval_ready(self, lc: SimulatedLC, job: _Job, identity: str) -> None:
        models = cond_models(_conditions(job.obj), "Train", "Completed", "output")
        if not models:
            self._warn_once(
                lc, job, f"trained-{identity}",
                f"job {job.key}: no trained model in the Train/Completed conditions; "
                "reporting eval/failed",
            )  # fmt: skip
            self._report(lc, job, identity, "eval", "failed")
            return
        job.rounds = max(job.rounds, 1)
        input_ = {"models": models, **self._data_input(job, "eval")}
        logger.info(
            "{}/lc: lifelong learning job {}: {} eval samples: eval/ready",
            lc.node, job.key, job.eval_samples,
        )  # fmt: skip
        job.eval_samples = 0
        self._report(lc, job, identity, "eval", "ready", input_=input_)

    def _deploy(self, lc: SimulatedLC, job: _Job, identity: str) -> None:
        models = cond_models(_conditions(job.obj), "Eval", "Completed", "output")
        if not models:
            logger.info(
                "{}/lc: lifelong learning job {}: no evaluated model: deploy/completed",
                lc.node, job.key,
            )  # fmt: skip
            self._report(lc, job, identity, "deploy", "completed")
            return
        model = {"format": models[0].get("format", ""), "url": models[0].get("url", "")}
        logger.info(
            "{}/lc: lifelong learning job {}: {} copied to {}/{}: deploy/ready",
            lc.node, job.key, model["url"], job.output_dir, DEPLOY_MODEL,
        )  # fmt: skip
        self._report(lc, job, identity, "deploy", "ready", input_={"models": [model]})

    # -- the worker's report -----------------------------------------------------------

    def on_worker_finished(self, lc: SimulatedLC, pod: dict[str, Any]) -> bool:
        meta = pod.get("metadata") or {}
        owner = next((r for r in meta.get("ownerReferences") or [] if r.get("controller")), None)
        if owner is None or owner.get("kind") != OWNER_KIND:
            return False
        self._worker_report(lc, pod, 0)
        return True

    def _worker_report(self, lc: SimulatedLC, pod: dict[str, Any], attempt: int) -> None:
        meta = pod.get("metadata") or {}
        owner = next(r for r in meta.get("ownerReferences") or [] if r.get("controller"))
        kind = worker_type(pod)
        if kind not in ("train", "eval"):
            return
        key = f"{meta.get('namespace')}/{owner.get('name')}"
        job = self.jobs.get(key)
        if job is None:
            if attempt < WORKER_REPORT_RETRIES:
                # The GM may not have (re)sent the job yet, e.g. right after a restart.
                lc.scheduler.call_later(0.5, lambda: self._worker_report(lc, pod, attempt + 1))
            else:
                logger.warning(
                    "{}/lc: worker {} reports for unknown lifelong learning job {}; dropped",
                    lc.node, meta.get("name"), key,
                )  # fmt: skip
            return
        _, stage, _ = _latest(job.obj)
        if stage.lower() != kind:
            logger.info(
                "{}/lc: worker {} of job {}: {} report dropped, the job is in stage {}",
                lc.node, meta.get("name"), job.key, kind, stage or "-",
            )  # fmt: skip
            return
        if kind == "train":
            models = self._knowledge_base(job)
        else:
            models = []
            for i, m in enumerate(
                cond_models(_conditions(job.obj), "Eval", "Ready", "input") or []
            ):
                evaluated = copy.deepcopy(m)
                evaluated["metrics"] = {METRIC: [round(0.9 - 0.05 * i, 4)]}
                models.append(evaluated)
        logger.info(
            "{}/lc: worker {} of lifelong learning job {}: {}/completed ({} model(s))",
            lc.node, meta.get("name"), job.key, kind, len(models),
        )  # fmt: skip
        self._report(lc, job, "", kind, "completed", output={"models": models, "ownerInfo": None})

    def _knowledge_base(self, job: _Job) -> list[dict[str, Any]]:
        """What the train worker hands back: the knowledge base index, one task per round."""
        out = _cond_input(job.obj, "Train", "Ready").get("outputDir") or (
            f"{job.output_dir}/train/{max(job.rounds, 1)}"
        )
        rounds = max(job.rounds, 1)
        tasks: Mapping[str, dict[str, float]] = {
            f"task-{r}": {METRIC: round(0.70 + 0.2 * (1 - 1 / (r + 1)), 4)}
            for r in range(1, rounds + 1)
        }
        return [
            {
                "format": "pkl",
                "url": f"{out}/{KB_INDEX}",
                "classes": list(CLASSES),
                "current_metric": dict(tasks),
                "number_of_labeled_unseen_sample": job.round_samples,
                "number_of_model": rounds,
            }
        ]


def _conditions(obj: dict[str, Any]) -> list[dict[str, Any]]:
    conds = (obj.get("status") or {}).get("conditions") or []
    return [c for c in conds if isinstance(c, dict)]
