"""The one error type of the worker runtime.

Sedna's Go GM logs and drops several of these conditions (a credential
secret without an endpoint yields a pod without credentials). We raise
instead, and the error names the job and the field, so the feature
controller can put it into an Event and a condition the user can act on.
"""

from __future__ import annotations


class WorkerError(Exception):
    """A worker could not be built from the job's spec.

    ``job`` is ``namespace/name``; ``field`` is the path of the offending
    field as the caller named it (e.g. ``spec.trainSpec.template.spec.containers``),
    so the message points at what the user has to change.
    """

    def __init__(self, job: str, field: str, message: str, *, kind: str = "") -> None:
        self.job = job
        self.field = field
        self.message = message
        self.kind = kind
        prefix = f"{kind} {job}" if kind else job
        super().__init__(f"{prefix}: {field}: {message}")


class MissingReference(WorkerError):
    """An object the spec names (a credential Secret) does not exist yet.

    Not a spec error: creating the object cures it without an edit, so callers wait
    and retry (``Pending`` with `reason`) instead of failing the owner. Sedna's Go GM
    ignores the failed read and builds the worker without the credentials; the worker
    then fails at its first download, far from the cause.
    """

    def __init__(
        self, job: str, field: str, message: str, *, kind: str = "", reason: str = ""
    ) -> None:
        super().__init__(job, field, message, kind=kind)
        self.reason = reason or "ReferenceNotFound"
