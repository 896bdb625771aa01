"""What a handler returns, merged into `.status`: JSON merge patch (RFC 7386).

A handler says only the fields it owns: `{"phase": "Ready"}` leaves every other status
field as it is, `None` removes a field, a nested mapping merges, and any other value
(a list too) replaces. The same patch can then be applied again to a fresher object
after a 409 Conflict without undoing what another writer put in the other fields.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["StatusPatch", "check_patch", "merge_patch"]

StatusPatch = Mapping[str, Any] | None
"""What a handler returns: fields to merge into `.status` (None: nothing to write)."""


def merge_patch(target: Any, patch: Mapping[str, Any]) -> dict[str, Any]:
    """`target` with `patch` merged in; neither is changed (the cache's objects are
    shared), parts `patch` does not touch are shared with `target`."""
    out: dict[str, Any] = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping):
            out[key] = merge_patch(out.get(key), value)
        else:
            out[key] = value
    return out


def check_patch(value: object) -> str | None:
    """What is wrong with a handler's return value as a status patch; None if nothing.

    Checked before anything is written, so a bad return is reported as the handler's
    error (naming it) instead of a failed request or a half-written status.
    """
    if value is None:
        return None
    if not isinstance(value, Mapping):
        return f"returned {type(value).__name__}, not a mapping of status fields or None"
    bad = [key for key in value if not isinstance(key, str)]
    if bad:
        return f"returned a status with a key that is not a string: {bad[0]!r}"
    try:
        json.dumps(value)
    except (TypeError, ValueError) as exc:
        return f"returned a status that is not JSON: {exc}"
    return None
