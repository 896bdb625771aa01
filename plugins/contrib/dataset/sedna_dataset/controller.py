"""The Dataset controller: every Dataset to the LC of its node, LC sample counts back.

Sedna parity (pkg/globalmanager/controllers/dataset): an add or update is sent as
`insert` (Sedna sends watch.Added for both) to `spec.nodeName`, with the credential
secret in the `sedna.io/credential` annotation; a delete (tombstones too) is sent as
`delete`; an LC's `status` report replaces the Dataset's status, `updateTime`
defaulting to now. Like Sedna, there is no workqueue: sends happen on the informer's
thread and status writes on the upstream handler's thread, and nothing is kept in
memory, so a restart loses nothing (the relist re-sends every Dataset).

Differences from Sedna, on purpose:

1. A Dataset without `spec.nodeName` gets a Warning Event naming the field (Sedna
   returns an error nobody logs).
2. A missing credential secret gets a Warning Event naming `spec.credentialName`; the
   Dataset is still sent, without credentials, as Sedna does (the LC can still use a
   local URL, and the next resync sends the credentials once the secret exists).
3. An edit of `spec.nodeName` also deletes the Dataset on the old node (Sedna leaves
   the old LC monitoring it and reporting counts for it).
4. Status-only writes (our own, after each report) are not echoed back to the LC.
5. A report is checked (count an integer >= 0, updateTime RFC 3339) and accepted only
   from the LC of the Dataset's node; a bad one gets a log line naming node, dataset
   and field, and a Warning Event. Sedna writes whatever unmarshals.
6. Neither the cached Dataset nor the secret is changed in place (Sedna's injector
   writes into both, and panics on a secret without annotations).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from loguru import logger

from sedna.runtime import (
    DATASETS,
    SECRETS,
    ApiError,
    ControllerContext,
    DeletedFinalStateUnknown,
    NotFound,
    ResourceEventHandlerFuncs,
    UpstreamMessage,
    attach_credential,
    update_status_with_retry,
)

from .downstream import (
    INSERT,
    KIND,
    EdgeMessage,
    credential_of,
    edge_relevant_change,
    node_of,
    outgoing,
    plan_delete,
    plan_upsert,
)
from .status import ReportError, status_from_report

Obj = Mapping[str, Any]

REASON_NO_NODE = "MissingNodeName"
REASON_NO_CREDENTIAL = "CredentialNotFound"
REASON_BAD_REPORT = "InvalidReport"


def _name(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


class DatasetController:
    """One per GM; `start`/`stop` are what the manager calls."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.client = ctx.kube.resource(DATASETS)
        self.secrets = ctx.kube.resource(SECRETS)
        self.informer = ctx.informers.informer(DATASETS)
        self._stopped = threading.Event()
        self.informer.add_event_handler(
            ResourceEventHandlerFuncs(add=self._added, update=self._updated, delete=self._deleted)
        )
        ctx.upstream.register(KIND, self.handle_report)

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Nothing to run: the informer and the upstream dispatcher drive everything."""
        self._stopped.clear()

    def stop(self) -> None:
        # Informers outlive the features briefly at shutdown; send nothing more.
        self._stopped.set()

    # -- downstream (informer thread) ------------------------------------------------

    def _added(self, obj: Obj) -> None:
        self._upsert(None, obj, report=True)

    def _updated(self, old: Obj, new: Obj) -> None:
        if not edge_relevant_change(old, new):
            return
        resync = (old.get("metadata") or {}).get("resourceVersion") == (
            new.get("metadata") or {}
        ).get("resourceVersion")
        # A resync re-sends, but does not repeat Events for a problem already reported.
        self._upsert(old, new, report=not resync)

    def _deleted(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        dataset = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if self._stopped.is_set():
            return
        try:
            messages = plan_delete(dataset)
            if not messages:
                logger.debug("{} {} deleted; it had no node, nothing to send", KIND, _name(dataset))
            self._send(messages)
        except Exception as exc:  # an informer thread must never die of our bug
            logger.opt(exception=exc).error(
                "downstream delete of {} {} failed", KIND, _name(dataset)
            )

    def _upsert(self, old: Obj | None, new: Obj, *, report: bool) -> None:
        if self._stopped.is_set():
            return
        try:
            messages = plan_upsert(old, new)
            if not node_of(new):
                self._warn(
                    new,
                    REASON_NO_NODE,
                    "spec.nodeName is empty: the dataset is sent to no LC",
                    report,
                )
            for m in messages:
                if m.operation == INSERT:
                    self._add_credential(m, report)
            self._send(messages)
        except Exception as exc:  # an informer thread must never die of our bug
            logger.opt(exception=exc).error("downstream sync of {} {} failed", KIND, _name(new))

    def _add_credential(self, m: EdgeMessage, report: bool) -> None:
        secret_name = credential_of(m.obj)
        if not secret_name:
            return
        ns = str((m.obj.get("metadata") or {}).get("namespace") or "")
        try:
            secret = self.secrets.get(ns, secret_name)
        except NotFound:
            self._warn(
                m.obj,
                REASON_NO_CREDENTIAL,
                f"spec.credentialName: secret {ns}/{secret_name} not found; "
                f"sent to node {m.node} without credentials",
                report,
            )
            return
        except ApiError as exc:
            self._warn(
                m.obj,
                REASON_NO_CREDENTIAL,
                f"spec.credentialName: cannot read secret {ns}/{secret_name} "
                f"({exc.status} {exc.reason}); sent to node {m.node} without credentials",
                report,
            )
            return
        attach_credential(m.obj, secret)

    def _send(self, messages: list[EdgeMessage]) -> None:
        for m in messages:
            try:
                self.ctx.send(m.node, m.operation, m.obj)
            except Exception as exc:
                logger.warning(
                    "downstream: cannot send {} {} to node {} ({}): {}",
                    KIND, _name(m.obj), m.node, m.operation, exc,
                )  # fmt: skip

    def _warn(self, obj: Obj, reason: str, message: str, report: bool) -> None:
        if not report:
            logger.debug("{} {}: {}", KIND, _name(obj), message)
            return
        logger.warning("{} {}: {}", KIND, _name(obj), message)
        self.ctx.events.warning(outgoing(obj), reason, message)

    # -- upstream (upstream handler thread) ------------------------------------------

    def handle_report(self, msg: UpstreamMessage) -> None:
        """An LC's status report: it becomes the Dataset's status; bad ones are only reported."""
        where = f"report from node {msg.node_name} for {KIND} {msg.namespace}/{msg.name}"
        if msg.operation != "status":
            logger.warning("{}: operation {!r} ignored (only status)", where, msg.operation)
            return
        try:
            cached = self.informer.get_or_read(msg.namespace, msg.name)
        except ApiError as exc:
            logger.error("{}: cannot read the dataset: {}", where, exc)
            return
        if cached is None:
            logger.warning("{}: no such dataset, report ignored", where)
            return
        node = node_of(cached)
        if node != msg.node_name:
            # A stale LC (the dataset moved) or a wrong one must not overwrite the count.
            logger.warning("{}: the dataset is on node {!r}, report ignored", where, node)
            return
        try:
            status = status_from_report(msg.content, self.ctx.clock.wall())
        except ReportError as exc:
            logger.warning("{}: invalid report: content.{}: {}", where, exc.field, exc.reason)
            self.ctx.events.warning(
                outgoing(cached),
                REASON_BAD_REPORT,
                f"LC on node {msg.node_name} sent an invalid report: content.{exc.field}: "
                f"{exc.reason}",
            )
            return

        def mutate(fresh: dict[str, Any]) -> bool:
            if fresh.get("status") == status:
                return False
            fresh["status"] = status
            return True

        try:
            update_status_with_retry(self.client, msg.namespace, msg.name, mutate, current=cached)
        except NotFound:
            logger.warning("{}: dataset deleted meanwhile, report dropped", where)
        except ApiError as exc:
            logger.error("{}: cannot write the reported status: {}", where, exc)
