"""What a staged-job feature supplies to the stage machine, and what it may raise.

A staged job (Sedna's IncrementalLearningJob, LifelongLearningJob) is a Train -> Eval
-> Deploy cycle driven by an append-only list of conditions (see `conditions`). The
machine (`StageMachine`) owns everything the kinds share; a feature subclasses
`StagedJobFeature` and supplies only what is its own:

- `parse_spec(job)`: the typed spec, or `InvalidJob(field, reason)`;
- `stage_pod(...)`: the Train/Eval worker for a Ready condition (template + params);
- `inference_pod(...)`: the Deploy worker; `inference_at_start` says whether it is
  created at the first sync (IL) or only at Deploy (LL);
- `hot_update(spec)`: whether a Deploy Ready waits for the running worker to load the
  model (Starting) instead of replacing the worker (Completed);
- `check_inputs(...)`: while Waiting, raise `StageBlocked` naming a missing input;
- `plan(operation, job)`: the downstream messages (`EdgeMessage`) for a job event;
- `report_data(content)` / `on_report(status, content)`: an LC report's condition data
  and the feature's own status fields (LL's `status.knowledgeBase`);
- `dependencies()`: other objects (Models, Datasets) whose appearance wakes a job.

Hooks run on controller worker threads (or, for `plan`, on informer threads) and read
cached objects, which they must never change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sedna.runtime.informers import SharedInformer
from sedna.runtime.kube import Resource
from sedna.runtime.stages.conditions import DEPLOY, EVAL, TRAIN
from sedna.runtime.workers import WorkerParam

__all__ = [
    "DELETE",
    "INSERT",
    "STAGE_ANNOTATION_PREFIX",
    "Dependency",
    "EdgeMessage",
    "InvalidJob",
    "PodRequest",
    "ReportError",
    "StageBlocked",
    "StageOptions",
    "StageRetry",
    "StagedJobFeature",
    "stage_node",
]

Obj = Mapping[str, Any]

INSERT = "insert"
DELETE = "delete"
STAGE_ANNOTATION_PREFIX = "sedna.io/"
"""`sedna.io/<Stage>` on the job: the node its stage's worker runs on (Sedna's key)."""


def stage_node(job: Obj, stage: str) -> str:
    """The node recorded for `stage` ("" while the stage has not run anywhere)."""
    meta = job.get("metadata")
    annotations = (meta.get("annotations") if isinstance(meta, Mapping) else None) or {}
    return str(annotations.get(STAGE_ANNOTATION_PREFIX + stage) or "")


@dataclass(frozen=True)
class EdgeMessage:
    """One object for the LC of one node (`operation`: insert or delete)."""

    node: str
    operation: str
    obj: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind", ""))

    @property
    def name(self) -> str:
        return str((self.obj.get("metadata") or {}).get("name", ""))


@dataclass(frozen=True)
class PodRequest:
    """A worker to create: the pod template, its runtime parameters, and the template's
    field path (named in errors and Events, e.g. `spec.trainSpec.template`)."""

    template: Obj
    param: WorkerParam
    field: str


@dataclass(frozen=True)
class Dependency:
    """Objects of another kind a job refers to: `names(job)` are the ones it names.

    When one appears (or its spec changes) the jobs naming it are synced and sent
    downstream at once, not at the next resync.
    """

    informer: SharedInformer
    names: Callable[[Obj], set[str]]


@dataclass(frozen=True)
class StageOptions:
    """The machine's tunables (a feature maps its gm.yaml options onto them).

    `max_conditions` >= 6 (see `conditions.trim`); a failed stage goes back to Train
    after `failure_backoff_seconds`, doubling per failure in a row up to the maximum.
    """

    max_conditions: int = 50
    failure_backoff_seconds: float = 10.0
    failure_backoff_max_seconds: float = 360.0


class StageBlocked(Exception):
    """The job cannot move until something it watches changes (a Model, a Dataset, its
    spec, an LC report): reported as a Warning Event and on the latest condition
    (`reason`, `message`), not retried."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class StageRetry(StageBlocked):
    """A failure that may heal by itself (API error, missing secret): reported like
    `StageBlocked`, then retried with the queue's backoff."""


class InvalidJob(ValueError):
    """The job's spec is invalid; `field` is its path (`spec.trainSpec.template`)."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class ReportError(ValueError):
    """An LC report that cannot become a condition; `field` is the path inside the
    report's content (`input.dataURL`), without a `content.` prefix."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


@dataclass
class StagedJobFeature:
    """Base of a feature's part; override the hooks, keep the defaults where they fit.

    `resource`: the job's API resource (its kind is the job kind). `stage_workers`: the
    worker type of each stage (the `<kind>.sedna.io/worker-type` label value).
    `log_name`: how log lines name a job ("incremental learning job").
    """

    resource: Resource
    log_name: str
    stage_workers: Mapping[str, str] = field(
        default_factory=lambda: {TRAIN: "train", EVAL: "eval", DEPLOY: "inference"}
    )
    inference_at_start: bool = False

    @property
    def kind(self) -> str:
        return self.resource.kind

    def parse_spec(self, job: Obj) -> Any:
        """The job's typed spec; raise `InvalidJob` naming the field."""
        return job.get("spec")

    def stage_pod(
        self, job: Obj, spec: Any, stage: str, condition: Obj, data_field: str
    ) -> PodRequest:
        """The Train/Eval worker for the Ready `condition` (its `data` carries the LC's
        inputs; `data_field` is its path, `status.conditions[i].data`, for errors).

        Raise `StageBlocked` for a missing or invalid input, `StageRetry` for a
        transient failure."""
        raise StageBlocked("NoWorker", f"{self.kind} has no {stage} worker")

    def inference_pod(self, job: Obj, spec: Any) -> PodRequest:
        """The Deploy worker (created at the first sync or at Deploy, see the class)."""
        raise StageBlocked("NoWorker", f"{self.kind} has no inference worker")

    def start_annotations(self, job: Obj, spec: Any) -> Mapping[str, str]:
        """Annotations the job must carry once its inference worker exists (IL's
        model hot-update path); applied after each creation of that worker."""
        return {}

    def hot_update(self, spec: Any) -> bool:
        """True: a Deploy Ready waits for the running worker to load the new model
        (Starting -> Running); False: the worker is replaced and Deploy completes."""
        return False

    def check_inputs(self, job: Obj, spec: Any, stage: str) -> None:
        """While the job waits at `stage`: raise `StageBlocked` naming an object the
        LC needs but that does not exist yet (it is reported, and the job wakes when
        the object appears)."""

    def plan(self, operation: str, job: Obj) -> list[EdgeMessage]:
        """The messages for one job event (`insert` or `delete`). Messages of the job's
        kind are remembered per node, so a delete also reaches every node that got the
        job even when the objects that routed it there are gone."""
        return []

    def report_data(self, content: Obj) -> str:
        """A status report's condition data (the JSON the LC reads back); raise
        `ReportError` naming the field inside `content`."""
        return ""

    def on_report(self, status: dict[str, Any], content: Obj) -> None:
        """Update the feature's own status fields from a valid report, in the same
        write as its condition (`status` is the fresh copy being written)."""

    def dependencies(self) -> Sequence[Dependency]:
        """The other objects a job names whose appearance must wake it."""
        return ()
