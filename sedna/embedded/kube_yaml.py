"""YAML read as kubectl reads it: `24:00` is a string, not the integer 1440.

PyYAML follows YAML 1.1 to the letter, where `02:00` is a base-60 number; kubectl's
YAML library does not, so Sedna's own samples (`timer: {start: 02:00, end: 24:00}`)
reach kube-apiserver as strings and pass the CRD's `type: string`. Manifests applied by
the embedded mode are read the same way, or the schema would refuse them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import yaml

_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class KubeSafeLoader(_BASE):  # type: ignore[misc,valid-type]
    """SafeLoader without YAML 1.1's base-60 integers and floats."""


KubeSafeLoader.yaml_implicit_resolvers = {
    first: [
        (tag, regexp)
        for tag, regexp in resolvers
        if tag not in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
    ]
    for first, resolvers in _BASE.yaml_implicit_resolvers.items()
}
_INT = re.compile(
    r"""^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$""",
    re.X,
)
_FLOAT = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$""",
    re.X,
)
KubeSafeLoader.add_implicit_resolver("tag:yaml.org,2002:int", _INT, list("-+0123456789"))
KubeSafeLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))


def load_all(text: str) -> Iterator[Any]:
    """Every document of a multi-document YAML text."""
    return yaml.load_all(text, Loader=KubeSafeLoader)
