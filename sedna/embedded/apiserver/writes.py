"""Writes whose cost grows with the object, worked out off the server's loop.

A strategic merge of 20,000 env entries, a JSON patch whose copies fill 3 MB or a PUT
of megabytes leave an object that must be checked (`object_validation`, the CRD's
schema), compared with the stored one and encoded: tens of milliseconds of Python
that, on the loop, every other request waited for. Here the whole draft
(`Operations.draft_create`/`draft_update`, after `apply_patch` for a patch) runs on the
write pool (``pool``), and so does the encoding of the answer when nothing is stored;
the loop only commits it (`Operations.commit`: O(1) checks, the store's durable write,
the resourceVersion spliced into the encoded bytes, the event) and answers the bytes
the store wrote.

If the store changed what a draft assumed meanwhile (the object was written, a
generated name was taken), it is worked out again on the new state, as kube-apiserver
applies a patch again on a conflict: no write is lost, and a resourceVersion
precondition is checked against the version the write really replaces. Commits stay
on the loop, one at a time, in the order they reach it, so the store's ordering (one
resourceVersion after another, durable before visible) is what it was.

Patches always come here (what they make is known only once applied); creates and
updates when their body or the object they replace is large (`LARGE_BYTES`), so a
small write never waits on the pool behind a large one. CRD creates stay on the loop:
they change what the server serves as they are stored.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from . import errors
from .bodies import LARGE_BYTES
from .operations import Draft, Operations, Stale
from .patches import apply_patch
from .pool import off_loop
from .resources import CRD_KEY, ResourceType
from .schema_validation import add_pruned, collect_pruned

# a write the object's other writers keep making stale is answered 409 after these
ATTEMPTS = 5


@dataclass
class Written:
    """A write's answer: the object as served, and its JSON when already encoded."""

    obj: dict[str, Any]
    raw: bytes | None = None


@dataclass
class _Worked:
    """What the pool hands back to the loop for one attempt."""

    draft: Draft
    # the unknown fields the schema pruned (for the answer's Warning headers)
    pruned: tuple[str, ...]
    # the answer's JSON when nothing is stored (a dry run, a no-op)
    answer: bytes | None


def own(body: Any) -> Any:
    """A private copy of a decoded body, so each attempt starts from the client's.

    orjson's round trip is an order of magnitude faster than ``copy.deepcopy``; what
    JSON cannot carry (a YAML body's dates) is copied as it is, for the checks and the
    store to answer as they would on the loop.
    """
    try:
        return orjson.loads(orjson.dumps(body, option=orjson.OPT_PASSTHROUGH_DATETIME))
    except orjson.JSONEncodeError:
        return copy.deepcopy(body)


def draft_patch(
    ops: Operations,
    rt: ResourceType,
    old: dict[str, Any],
    ns: str | None,
    name: str,
    subresource: str | None,
    ctype: str,
    patch: Any,
    field_validation: str | None,
) -> Draft:
    """A patch applied to the stored ``old`` (as served) and its result drafted."""
    new = apply_patch(ctype, ops.view(rt, old), patch)
    if not isinstance(new, dict):
        raise errors.bad_request("the patch did not produce an object")
    meta = new.get("metadata")
    if isinstance(meta, dict) and (
        meta.get("name") != name or (rt.namespaced and meta.get("namespace") != ns)
    ):
        raise errors.bad_request(
            "metadata.name and metadata.namespace cannot be changed by a patch"
        )
    return ops.draft_update(rt, old, new, subresource, field_validation=field_validation)


def _work(ops: Operations, draft: Callable[[], Draft], dry_run: bool) -> _Worked:
    """One attempt, on the pool: the draft, and the answer when nothing is stored."""
    done, pruned = collect_pruned(draft)
    answer = None
    if done.noop or (dry_run and done.encoded is not None):
        answer = orjson.dumps(ops.view(done.rt, done.obj))
    return _Worked(done, pruned, answer)


class Writes:
    """Creates, updates and patches as the handlers serve them."""

    def __init__(self, ops: Operations) -> None:
        self.ops = ops

    async def create(
        self,
        rt: ResourceType,
        ns: str | None,
        body: Any,
        size: int,
        field_validation: str | None,
        *,
        dry_run: bool,
    ) -> Written:
        """POST of a decoded body of ``size`` bytes (the body is given away)."""
        ops = self.ops
        if size <= LARGE_BYTES or rt.key == CRD_KEY:
            return Written(ops.create(rt, ns, body, field_validation, dry_run=dry_run, owned=True))
        draft = functools.partial(self._draft_create, rt, ns, body, field_validation)
        for _ in range(ATTEMPTS):
            written = self._commit(await self._run(draft, dry_run), dry_run)
            if written is not None:
                return written
        raise errors.conflict(rt.plural, str(body.get("metadata", {}).get("name", "")), rt.group)

    def _draft_create(
        self, rt: ResourceType, ns: str | None, body: Any, field_validation: str | None
    ) -> Draft:
        return self.ops.draft_create(rt, ns, own(body), field_validation, owned=True)

    async def update(
        self,
        rt: ResourceType,
        ns: str | None,
        name: str,
        body: Any,
        size: int,
        subresource: str | None,
        field_validation: str | None,
        *,
        dry_run: bool,
    ) -> Written:
        """PUT of a decoded body of ``size`` bytes (the body is given away)."""
        ops = self.ops
        ops.check_put(rt, ns, name, body)
        old = ops.current(rt, ns, name)
        large = ops.store.is_large(rt.key, old["metadata"].get("namespace", ""), name)
        if rt.key == CRD_KEY or (size <= LARGE_BYTES and not large):
            return Written(
                ops.update(
                    rt, ns, name, body, subresource, field_validation, dry_run=dry_run, owned=True
                )
            )
        for _ in range(ATTEMPTS):
            old = ops.current(rt, ns, name)
            draft = functools.partial(
                self._draft_update, rt, old, body, subresource, field_validation
            )
            written = self._commit(await self._run(draft, dry_run), dry_run)
            if written is not None:
                return written
        raise errors.conflict(rt.plural, name, rt.group)

    def _draft_update(
        self,
        rt: ResourceType,
        old: dict[str, Any],
        body: Any,
        subresource: str | None,
        field_validation: str | None,
    ) -> Draft:
        new = own(body)
        return self.ops.draft_update(rt, old, new, subresource, field_validation=field_validation)

    async def patch(
        self,
        rt: ResourceType,
        ns: str | None,
        name: str,
        subresource: str | None,
        ctype: str,
        patch: Any,
        field_validation: str | None,
        *,
        dry_run: bool,
    ) -> Written:
        """PATCH: applied and drafted on the pool, again on the new object if it changed."""
        ops = self.ops
        for _ in range(ATTEMPTS):
            old = ops.current(rt, ns, name)
            draft = functools.partial(
                draft_patch, ops, rt, old, ns, name, subresource, ctype, patch, field_validation
            )
            written = self._commit(await self._run(draft, dry_run), dry_run)
            if written is not None:
                return written
        raise errors.conflict(rt.plural, name, rt.group)

    async def _run(self, draft: Callable[[], Draft], dry_run: bool) -> _Worked:
        return await off_loop(_work, self.ops, draft, dry_run)

    def _commit(self, worked: _Worked, dry_run: bool) -> Written | None:
        """Commit one attempt on the loop; None when it was stale (work it out again)."""
        draft = worked.draft
        try:
            obj = self.ops.commit(draft, dry_run=dry_run)
        except Stale:
            return None
        add_pruned(worked.pruned)
        if worked.answer is not None:
            return Written(obj, worked.answer)
        if obj is draft.obj and draft.encoded is not None:
            # the bytes the store wrote (and the watch events carry)
            return Written(obj, draft.encoded.with_rv(obj["metadata"]["resourceVersion"]))
        return Written(obj)
