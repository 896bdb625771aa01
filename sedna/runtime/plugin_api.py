"""What a plugin needs to declare itself: the hook marker and the feature description.

It lives in the runtime (not in `sedna.plugins`) because plugins may import only
`sedna.runtime`; the manager side (specs, loading) stays above it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import pluggy

if TYPE_CHECKING:
    from pydantic import ValidationError

    from sedna.runtime.context import ControllerContext

PROJECT = "sedna"

hookimpl = pluggy.HookimplMarker(PROJECT)
"""Marks a plugin function as an implementation of a hook in `sedna.plugins.hookspecs`."""


class FeatureController(Protocol):
    """What a feature factory returns: something the manager can start and stop."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


OptionsValidator = Callable[[Mapping[str, Any]], Any]
"""Takes the feature's own options from gm.yaml and returns the validated form.

Raise `FeatureOptionsError` (or pydantic's ValidationError) naming the key on bad input.
"""


class FeatureOptionsError(ValueError):
    """A feature's option is wrong; `key` is relative to the feature's gm.yaml section."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason

    @classmethod
    def from_validation(cls, exc: ValidationError) -> FeatureOptionsError:
        """The first error of an options model's validation, worded as gm.yaml's are
        (`describe_error`), with the key relative to the feature's section.

        A model-level check names its key by saying "<key>: <reason>".
        """
        from sedna.runtime.config import describe_error

        err = exc.errors()[0]
        if err.get("type") == "extra_forbidden":
            return cls(".".join(str(p) for p in err.get("loc", ())), "unknown option")
        if not err.get("loc"):
            msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
            key, _, reason = msg.partition(": ")
            return cls(key, reason or msg)
        key, _, reason = describe_error(err).partition(": ")
        return cls(key, reason)


@dataclass(frozen=True)
class ApiAccess:
    """One RBAC rule's worth of API access that a feature's controller needs.

    Features declare what they call (beyond the runtime core's own reads), so the
    GM's RBAC can be generated from the enabled features and checked against the
    calls really made: least privilege follows the code instead of a hand-kept file.
    `group` is "" for the core API; `resources` may name subresources (`pods/status`).
    """

    group: str
    resources: Sequence[str]
    verbs: Sequence[str]


@dataclass(frozen=True)
class Feature:
    """One feature a plugin provides.

    `name` is the key under `features:` in gm.yaml and must equal the plugin's entry
    point name, so a disabled feature can be blocked before its module is imported.
    `kinds` are the Sedna kinds it controls (two features may not claim one kind).
    `access` is the API access its controllers need (see `ApiAccess`).
    """

    name: str
    kinds: Sequence[str]
    factory: Callable[[ControllerContext], FeatureController]
    validate_options: OptionsValidator | None = None
    description: str = ""
    default_options: Mapping[str, Any] = field(default_factory=dict)
    access: Sequence[ApiAccess] = ()
