"""The IncrementalLearningJob controller: the runtime's stage machine with IL's own parts.

The stage machine (`sedna.runtime.StageMachine`) does what every staged-job kind
shares: conditions, stage pods, expectations, backoff, downstream memory, LC reports.
What is IL's own lives here (Sedna's pkg/globalmanager/controllers/incrementallearning):

- the inference worker is created at the first sync, with the deploy Model; with hot
  update its config path is set as the `model-hot-update` annotation, and a Deploy
  waits for the running worker to load the new model instead of replacing it;
- Train/Eval workers are built from the Ready condition's data, the initial Model and
  the Dataset (`workers`); the Models and the Dataset are watched;
- downstream follows Sedna's `syncToEdge` rules with models (`downstream`).

Fixes over Sedna beyond the machine's: a failed inference-worker creation on first
sync is reported (Event) and retried with backoff (Sedna returns "done" and never
looks at the job again); secret look-up errors for the inference worker are reported
on the job (Sedna creates a pod without credentials); a missing Dataset or initial
Model is named on the waiting job (Sedna says nothing and the LC never gets the job).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loguru import logger

from sedna.runtime import (
    DATASETS,
    INCREMENTAL_LEARNING_JOBS,
    MODEL_HOT_UPDATE_ANNOTATION_KEY,
    MODELS,
    READY_CONDITION_ANNOTATION,
    SECRETS,
    ApiError,
    ControllerContext,
    Dependency,
    EdgeMessage,
    InvalidJob,
    NamedDataset,
    NotFound,
    PodRequest,
    SharedInformer,
    StageBlocked,
    StagedJobFeature,
    StageInputError,
    StageMachine,
    job_ref,
    model_hot_update_config_file,
    read_dataset,
    read_input,
)

from . import conditions as C
from .downstream import Getter, Lookups, plan
from .plugin import Options
from .spec import KIND, JobSpec, SpecError, cond_data, job_spec, model_spec
from .upstream import report_data
from .workers import (
    EVAL_WORKER,
    INFERENCE_WORKER,
    TRAIN_WORKER,
    JobInfo,
    NamedModel,
    eval_param,
    inference_param,
    train_param,
)

__all__ = ["READY_CONDITION_ANNOTATION", "IncrementalLearningController"]

Obj = Mapping[str, Any]


def _meta(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


class IncrementalLearningFeature(StagedJobFeature):
    """IL's part of the stage machine."""

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(
            resource=INCREMENTAL_LEARNING_JOBS,
            log_name="incremental learning job",
            stage_workers={C.TRAIN: TRAIN_WORKER, C.EVAL: EVAL_WORKER, C.DEPLOY: INFERENCE_WORKER},
            inference_at_start=True,
        )
        self.ctx = ctx
        self.secrets_client = ctx.kube.resource(SECRETS)
        self.models = ctx.informers.informer(MODELS)
        self.datasets = ctx.informers.informer(DATASETS)

    # -- spec and workers ------------------------------------------------------------

    def parse_spec(self, job: Obj) -> JobSpec:
        try:
            return job_spec(job)
        except SpecError as exc:
            raise InvalidJob(exc.field, exc.reason) from None

    def _model(self, job: Obj, name: str, field: str) -> NamedModel:
        ns = str(_meta(job).get("namespace"))
        obj = read_input(self.models, ns, name, f"Model {ns}/{name} ({field})")
        if obj is None:
            raise StageBlocked("MissingModel", f"Model {ns}/{name} ({field}) not found")
        try:
            return NamedModel(name, model_spec(obj))
        except SpecError as exc:
            raise StageBlocked("InvalidModel", str(exc)) from None

    def _dataset(self, job: Obj, name: str) -> NamedDataset:
        return read_dataset(self.datasets, str(_meta(job).get("namespace")), name)

    def _job_info(self, job: Obj) -> JobInfo:
        meta = _meta(job)
        return JobInfo(
            str(meta.get("namespace")),
            str(meta.get("name")),
            self.ctx.config.localController.server,
        )

    def check_inputs(self, job: Obj, spec: Any, stage: str) -> None:
        """The LC of the Dataset's node starts every stage; without the Dataset it never
        gets the job, and without the initial Model it cannot train."""
        assert isinstance(spec, JobSpec)
        self._dataset(job, spec.dataset.name)
        self._model(job, spec.initialModel.name, "spec.initialModel.name")

    def stage_pod(
        self, job: Obj, spec: Any, stage: str, condition: Obj, data_field: str
    ) -> PodRequest:
        assert isinstance(spec, JobSpec)
        initial = self._model(job, spec.initialModel.name, "spec.initialModel.name")
        self._model(job, spec.deploySpec.model.name, "spec.deploySpec.model.name")
        dataset = self._dataset(job, spec.dataset.name)
        meta = _meta(job)
        obj = f"{KIND} {meta.get('namespace')}/{meta.get('name')}"
        try:
            data = cond_data(condition.get("data"), obj, data_field)
            builder = train_param if stage == C.TRAIN else eval_param
            param = builder(self._job_info(job), spec, data, initial, dataset, data_field)
        except (SpecError, StageInputError) as exc:
            raise StageBlocked("InvalidConditionData", f"{exc.field}: {exc.reason}") from None
        if stage == C.TRAIN:
            return PodRequest(spec.trainSpec.template, param, "spec.trainSpec.template")
        return PodRequest(spec.evalSpec.template, param, "spec.evalSpec.template")

    def inference_pod(self, job: Obj, spec: Any) -> PodRequest:
        assert isinstance(spec, JobSpec)
        deploy = self._model(job, spec.deploySpec.model.name, "spec.deploySpec.model.name")
        param = inference_param(self._job_info(job), spec, deploy)
        return PodRequest(spec.deploySpec.template, param, "spec.deploySpec.template")

    def start_annotations(self, job: Obj, spec: Any) -> Mapping[str, str]:
        assert isinstance(spec, JobSpec)
        if not spec.deploySpec.model.hotUpdateEnabled:
            return {}
        return {MODEL_HOT_UPDATE_ANNOTATION_KEY: model_hot_update_config_file(job_ref(job))}

    def hot_update(self, spec: Any) -> bool:
        assert isinstance(spec, JobSpec)
        return spec.deploySpec.model.hotUpdateEnabled

    # -- downstream and upstream -----------------------------------------------------

    def _lookups(self) -> Lookups:
        def secret(ns: str, name: str) -> Obj | None:
            try:
                return self.secrets_client.get(ns, name)
            except NotFound:
                return None

        def cached_or_read(informer: SharedInformer) -> Getter:
            # Job events can come before the Dataset/Model caches synced (start, restart):
            # a miss is confirmed with the API, as Sedna always reads them from it.
            def get(ns: str, name: str) -> Obj | None:
                try:
                    return informer.get_or_read(ns, name)
                except ApiError:
                    return None

            return get

        return Lookups(
            dataset=cached_or_read(self.datasets),
            model=cached_or_read(self.models),
            secret=secret,
            warn=lambda text: logger.warning("downstream: {}", text),
        )

    def plan(self, operation: str, job: Obj) -> list[EdgeMessage]:
        return plan(operation, job, self._lookups())

    def report_data(self, content: Obj) -> str:
        return report_data(content)

    def dependencies(self) -> Sequence[Dependency]:
        return (
            Dependency(self.models, lambda job: _referenced(job, "model")),
            Dependency(self.datasets, lambda job: _referenced(job, "dataset")),
        )


class IncrementalLearningController(StageMachine):
    """One per GM; `start`/`stop` are what the manager calls."""

    def __init__(self, ctx: ControllerContext) -> None:
        opts = ctx.options
        self.options = opts if isinstance(opts, Options) else Options.model_validate(opts or {})
        self.il = IncrementalLearningFeature(ctx)
        super().__init__(
            ctx,
            self.il,
            self.options.stage_options(),
        )
        self.models = self.il.models
        self.datasets = self.il.datasets


def _referenced(job: Obj, field: str) -> set[str]:
    """Names of the Models ("model") or Datasets ("dataset") a raw job refers to."""
    spec = job.get("spec")
    if not isinstance(spec, Mapping):
        return set()

    def name_at(*path: str) -> str:
        cur: Any = spec
        for p in path:
            cur = cur.get(p) if isinstance(cur, Mapping) else None
        return cur if isinstance(cur, str) else ""

    if field == "dataset":
        names = {name_at("dataset", "name")}
    else:
        names = {
            name_at("initialModel", "name"),
            name_at("deploySpec", "model", "name"),
            name_at("evalSpec", "initialEvalModel", "name"),
        }
    return names - {""}
