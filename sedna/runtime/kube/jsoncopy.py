"""Deep copies of JSON objects (API responses, informer cache entries).

An orjson round trip copies a pod template or a job ~6x faster than
``copy.deepcopy``, which walks every dict and list in Python. Only objects that
orjson reproduces exactly take that path: datetimes, dataclasses and subclasses
of dict/str/list make it raise, and such objects keep ``copy.deepcopy``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import orjson

__all__ = ["json_deepcopy"]

_EXACT = (
    orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def json_deepcopy(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A private deep copy of ``obj`` as a plain dict (tuples become lists, as on the wire)."""
    try:
        out = orjson.loads(orjson.dumps(obj, option=_EXACT))
    except (TypeError, orjson.JSONEncodeError):
        return copy.deepcopy(dict(obj))
    return out if isinstance(out, dict) else copy.deepcopy(dict(obj))
