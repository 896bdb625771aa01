"""LifelongLearningJob's part of the runtime's stage machine: what is LL's own.

The machine (`sedna.runtime.StageMachine`) runs the Train -> Eval -> Deploy cycle that
LL shares with incremental learning: conditions, stage pods created once per Ready
condition (never twice, not even after a lost create response or a restart), the
`sedna.io/<Stage>` node annotations, failure backoff, Events, LC reports. This class
supplies LL's pods (`workers`), its downstream routing (`downstream`), its report
data and `status.knowledgeBase` (`upstream`, `knowledge_base`).

As in Sedna, the inference worker is created only at Deploy (never at the first
sync) and replaced at every later Deploy; there is no hot update.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loguru import logger

from sedna.runtime import (
    LIFELONG_LEARNING_JOBS,
    ApiError,
    Dependency,
    EdgeMessage,
    InvalidJob,
    NamedDataset,
    NotFound,
    PodRequest,
    ReportError,
    ResourceClient,
    SharedInformer,
    StageBlocked,
    StagedJobFeature,
    StageInputError,
    read_dataset,
)

from . import downstream
from .spec import JobSpec, SpecError, cond_data, job_name, job_spec
from .upstream import ReportError as LLReportError
from .upstream import parse_report
from .workers import (
    JobInfo,
    eval_param,
    inference_param,
    train_param,
)

Obj = Mapping[str, Any]


def _meta(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _conditions(job: Obj) -> list[Obj]:
    status = job.get("status")
    raw = status.get("conditions") if isinstance(status, Mapping) else None
    return [c for c in raw if isinstance(c, Mapping)] if isinstance(raw, list) else []


def dataset_names(job: Obj) -> set[str]:
    """The Dataset a raw job names (for waking it when the Dataset appears)."""
    spec = job.get("spec")
    ds = spec.get("dataset") if isinstance(spec, Mapping) else None
    name = ds.get("name") if isinstance(ds, Mapping) else None
    return {name} if isinstance(name, str) and name else set()


@dataclass
class LifelongLearning(StagedJobFeature):
    """The LL hooks; `datasets`, `secrets` and the servers come from the controller."""

    datasets: SharedInformer | None = None
    secrets: ResourceClient | None = None
    lc_server: str = ""
    kb_server: str = ""

    @classmethod
    def create(
        cls, datasets: SharedInformer, secrets: ResourceClient, lc_server: str, kb_server: str
    ) -> LifelongLearning:
        return cls(
            resource=LIFELONG_LEARNING_JOBS,
            log_name="lifelong learning job",
            inference_at_start=False,
            datasets=datasets,
            secrets=secrets,
            lc_server=lc_server,
            kb_server=kb_server,
        )

    # -- spec ---------------------------------------------------------------------------

    def parse_spec(self, job: Obj) -> JobSpec:
        try:
            return job_spec(job)
        except SpecError as exc:
            raise InvalidJob(exc.field, exc.reason) from None

    def _info(self, job: Obj) -> JobInfo:
        meta = _meta(job)
        return JobInfo(
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
            self.lc_server,
            self.kb_server,
        )

    def _dataset(self, job: Obj, spec: JobSpec) -> NamedDataset:
        assert self.datasets is not None
        ns = str(_meta(job).get("namespace") or "")
        return read_dataset(self.datasets, ns, spec.dataset.name)

    # -- pods ---------------------------------------------------------------------------

    def stage_pod(
        self, job: Obj, spec: JobSpec, stage: str, condition: Obj, data_field: str
    ) -> PodRequest:
        dataset = self._dataset(job, spec)
        try:
            data = cond_data(condition.get("data"), job_name(job), data_field)
            if stage == "Train":
                param = train_param(
                    self._info(job), spec, data, dataset, _conditions(job), data_field
                )
                return PodRequest(spec.trainSpec.template, param, "spec.trainSpec.template")
            param = eval_param(self._info(job), spec, data, dataset, data_field)
            return PodRequest(spec.evalSpec.template, param, "spec.evalSpec.template")
        except (SpecError, StageInputError) as exc:
            raise StageBlocked("InvalidConditionData", f"{exc.field}: {exc.reason}") from None

    def inference_pod(self, job: Obj, spec: JobSpec) -> PodRequest:
        param = inference_param(self._info(job), spec)
        return PodRequest(spec.deploySpec.template, param, "spec.deploySpec.template")

    def check_inputs(self, job: Obj, spec: JobSpec, stage: str) -> None:
        # The LC needs the Dataset to count samples: say so on the job while it waits.
        self._dataset(job, spec)

    # -- downstream ---------------------------------------------------------------------

    def _lookups(self) -> downstream.Lookups:
        def dataset(ns: str, name: str) -> Obj | None:
            if self.datasets is None:
                return None
            try:
                return self.datasets.get_or_read(ns, name)
            except ApiError:
                return None

        def secret(ns: str, name: str) -> Obj | None:
            if self.secrets is None:
                return None
            try:
                return self.secrets.get(ns, name)
            except (NotFound, ApiError):
                return None

        return downstream.Lookups(
            dataset=dataset,
            secret=secret,
            warn=lambda text: logger.warning("downstream: {}", text),
        )

    def plan(self, operation: str, job: Obj) -> list[EdgeMessage]:
        return downstream.plan(operation, job, self._lookups())

    # -- upstream -----------------------------------------------------------------------

    def report_data(self, content: Obj) -> str:
        try:
            return parse_report(content).data
        except LLReportError as exc:
            raise ReportError(exc.field, exc.reason) from None

    def on_report(self, status: dict[str, Any], content: Obj) -> None:
        try:
            kb = parse_report(content).knowledge_base
        except LLReportError:
            return  # report_data has rejected it already
        if kb is not None:
            status["knowledgeBase"] = kb

    def dependencies(self) -> Sequence[Dependency]:
        if self.datasets is None:
            return ()
        return (Dependency(self.datasets, dataset_names),)
