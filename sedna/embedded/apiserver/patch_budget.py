"""What one patch may cost, checked while it is applied rather than after.

A 1.8 KB JSON patch whose ``copy`` operations copy a list into itself doubles the
object with every operation: checking the size of the result once the patch is applied
is too late (gigabytes and seconds later). kube-apiserver bounds a JSON patch to 10,000
operations (413) and the bytes its copies may add (``JSONPatchMaxCopyBytes``, 3 MiB,
422). Both are kept here, and two more bounds that kube gets from Go's speed: the depth
a value may reach where it is put, and the work a patch may do in all (elements walked,
shifted, compared or copied), so no patch keeps the server busy for long.
"""

from __future__ import annotations

from typing import Any

import orjson

from .bodies import MAX_BODY_BYTES, MAX_DEPTH
from .errors import APIError

MAX_JSON_PATCH_OPS = 10_000
MAX_COPY_BYTES = MAX_BODY_BYTES
# Elements touched; a patch a client would send touches a few thousand.
MAX_PATCH_WORK = 1 << 24


def too_many_ops(count: int) -> APIError:
    return APIError(
        413,
        "RequestEntityTooLarge",
        "Request entity too large: The allowed count of operations in a JSON patch is "
        f"{MAX_JSON_PATCH_OPS}, but {count} given",
    )


def unprocessable(msg: str) -> APIError:
    return APIError(
        422, "Invalid", f"the server rejected our request due to an error in our request: {msg}"
    )


class PatchBudget:
    """The work, copied bytes and depth one patch may still spend."""

    def __init__(
        self,
        work: int = MAX_PATCH_WORK,
        copy_bytes: int = MAX_COPY_BYTES,
        depth: int = MAX_DEPTH,
    ) -> None:
        self.work = work
        self.copy_bytes = copy_bytes
        self.depth = depth

    def charge(self, units: int) -> None:
        """Spend ``units`` of work; a patch that needs more is refused (422)."""
        self.work -= units
        if self.work < 0:
            raise unprocessable("the patch is too expensive to apply")

    def place(self, at_depth: int, value: Any, bound: int | None = None) -> int:
        """Check that ``value`` put ``at_depth`` levels down nests within the limit.

        ``bound`` is an upper bound of the value's depth when the caller knows one (a
        value taken from the document); within the limit, the value is not walked.
        Returns the depth of the deepest level the value reaches.
        """
        limit = self.depth - at_depth
        if limit < 1:
            raise unprocessable(f"the patch would nest the object deeper than {self.depth} levels")
        if bound is not None and bound <= limit:
            return at_depth + bound
        return at_depth + self.measure(value, limit)

    def measure(self, value: Any, limit: int) -> int:
        """The depth of ``value`` (one walk, charged), refused past ``limit``."""
        nodes = 0
        deepest = 0
        stack: list[tuple[Any, int]] = [(value, 1)]
        while stack:
            item, depth = stack.pop()
            nodes += 1
            if depth > limit:
                self.charge(nodes)
                raise unprocessable(
                    f"the patch would nest the object deeper than {self.depth} levels"
                )
            if depth > deepest:
                deepest = depth
            if isinstance(item, dict):
                stack.extend((v, depth + 1) for v in item.values())
            elif isinstance(item, list):
                stack.extend((v, depth + 1) for v in item)
        self.charge(nodes)
        return deepest

    def copy(self, value: Any) -> Any:
        """A private copy of ``value``, its bytes counted against the copy limit."""
        try:
            raw = orjson.dumps(value)
        except orjson.JSONEncodeError as exc:
            raise unprocessable(f"cannot copy the value: {exc}") from None
        self.copy_bytes -= len(raw)
        if self.copy_bytes < 0:
            raise unprocessable(
                "Unable to complete the copy, the accumulated size increase of copy exceeds "
                f"the limit {MAX_COPY_BYTES}"
            )
        self.charge(len(raw) // 8)
        return _structural_copy(value)


def _structural_copy(value: Any) -> Any:
    """A copy of a JSON value's lists and dicts (its leaves are immutable).

    In Python bytecode rather than one `orjson.loads` of megabytes: a C call holds the
    GIL for its whole length, and a patch runs on a thread beside the server's event
    loop, which would wait that long for every request (tens of ms per call).
    """
    if isinstance(value, dict):
        return {k: _structural_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        if any(isinstance(v, (dict, list)) for v in value):
            return [_structural_copy(v) for v in value]
        return value[:]  # leaves only: one short C copy
    return value


def clone(value: Any) -> Any:
    """A deep copy of a JSON value, an order of magnitude faster than ``copy.deepcopy``."""
    return orjson.loads(orjson.dumps(value))
