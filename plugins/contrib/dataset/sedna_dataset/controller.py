"""The Dataset controller: every Dataset to the LC of its node, LC sample counts back.

Sedna parity (pkg/globalmanager/controllers/dataset): an add or update is sent as
`insert` (Sedna sends watch.Added for both) to `spec.nodeName`, with the credential
secret in the `sedna.io/credential` annotation; a delete (tombstones too) is sent as
`delete`; an LC's `status` report replaces the Dataset's status, `updateTime`
defaulting to now. It is a declarative feature: the sends run in the handlers of its
Datasets (one key per Dataset on a workqueue, so a burst of edits is one send of the
latest version), the reports in the message layer's report workers, and nothing that
matters is kept only in memory, so a restart loses nothing (every Dataset is added
again, and sent).

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

from collections.abc import Mapping
from typing import Any

from loguru import logger

from sedna.runtime import (
    DATASETS,
    SECRETS,
    ApiAccess,
    ApiError,
    DeclarativeFeature,
    HandlerContext,
    NotFound,
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

feature = DeclarativeFeature(
    "dataset",
    description="Sedna's Dataset: sent to the LC of its node, sample counts reported back",
    # What the handlers call by hand: the report's status write (and its re-read after a
    # conflict, or of a Dataset not cached yet) and the credential secret.
    access=[
        ApiAccess("sedna.io", ["datasets"], ["get"]),
        ApiAccess("sedna.io", ["datasets/status"], ["update"]),
        ApiAccess("", ["secrets"], ["get"]),
    ],
)


def _name(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


# -- downstream (the Datasets' workqueue) ----------------------------------------------


@feature.reconcile(DATASETS)
def relay(dataset: Obj, ctx: HandlerContext) -> None:
    """Send the Dataset to its node's LC: when added or changed, and again on a resync.

    A status-only change (our own write, after each report) is not echoed back to the
    LC. A resync re-sends without repeating Events for a problem already reported.
    """
    if ctx.old is not None and not edge_relevant_change(ctx.old, dataset):
        return
    report = ctx.change != "unchanged"
    messages = plan_upsert(ctx.old, dataset)
    if not node_of(dataset):
        _warn(
            ctx,
            dataset,
            REASON_NO_NODE,
            "spec.nodeName is empty: the dataset is sent to no LC",
            report,
        )
    for m in messages:
        if m.operation == INSERT:
            _add_credential(ctx, m, report)
    _send(ctx, messages)


@feature.on_delete(DATASETS)
def forget(dataset: Obj, ctx: HandlerContext) -> None:
    """Tell the LC of the Dataset's node (tombstones too) that it is gone."""
    messages = plan_delete(dataset)
    if not messages:
        logger.debug("{} {} deleted; it had no node, nothing to send", KIND, _name(dataset))
    _send(ctx, messages)


def _add_credential(ctx: HandlerContext, m: EdgeMessage, report: bool) -> None:
    secret_name = credential_of(m.obj)
    if not secret_name:
        return
    ns = str((m.obj.get("metadata") or {}).get("namespace") or "")
    try:
        secret = ctx.runtime.kube.resource(SECRETS).get(ns, secret_name)
    except NotFound:
        _warn(
            ctx,
            m.obj,
            REASON_NO_CREDENTIAL,
            f"spec.credentialName: secret {ns}/{secret_name} not found; "
            f"sent to node {m.node} without credentials",
            report,
        )
        return
    except ApiError as exc:
        _warn(
            ctx,
            m.obj,
            REASON_NO_CREDENTIAL,
            f"spec.credentialName: cannot read secret {ns}/{secret_name} "
            f"({exc.status} {exc.reason}); sent to node {m.node} without credentials",
            report,
        )
        return
    attach_credential(m.obj, secret)


def _send(ctx: HandlerContext, messages: list[EdgeMessage]) -> None:
    for m in messages:
        try:
            ctx.runtime.send(m.node, m.operation, m.obj)
        except Exception as exc:
            logger.warning(
                "downstream: cannot send {} {} to node {} ({}): {}",
                KIND, _name(m.obj), m.node, m.operation, exc,
            )  # fmt: skip


def _warn(ctx: HandlerContext, obj: Obj, reason: str, message: str, report: bool) -> None:
    if not report:
        logger.debug("{} {}: {}", KIND, _name(obj), message)
        return
    logger.warning("{} {}: {}", KIND, _name(obj), message)
    ctx.events.warning(outgoing(obj), reason, message)


# -- upstream (the message layer's report workers) -----------------------------------


@feature.on_report(DATASETS)
def handle_report(msg: UpstreamMessage, ctx: HandlerContext) -> None:
    """An LC's status report: it becomes the Dataset's status; bad ones are only reported."""
    where = f"report from node {msg.node_name} for {KIND} {msg.namespace}/{msg.name}"
    if msg.operation != "status":
        logger.warning("{}: operation {!r} ignored (only status)", where, msg.operation)
        return
    try:
        cached = ctx.runtime.informers.informer(DATASETS).get_or_read(msg.namespace, msg.name)
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
        status = status_from_report(msg.content, ctx.runtime.clock.wall())
    except ReportError as exc:
        logger.warning("{}: invalid report: content.{}: {}", where, exc.field, exc.reason)
        ctx.events.warning(
            outgoing(cached),
            REASON_BAD_REPORT,
            f"LC on node {msg.node_name} sent an invalid report: content.{exc.field}: {exc.reason}",
        )
        return

    def mutate(fresh: dict[str, Any]) -> bool:
        if fresh.get("status") == status:
            return False
        fresh["status"] = status
        return True

    client = ctx.runtime.kube.resource(DATASETS)
    try:
        update_status_with_retry(client, msg.namespace, msg.name, mutate, current=cached)
    except NotFound:
        logger.warning("{}: dataset deleted meanwhile, report dropped", where)
    except ApiError as exc:
        logger.error("{}: cannot write the reported status: {}", where, exc)
