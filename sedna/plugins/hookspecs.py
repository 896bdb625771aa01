"""The hooks a sedna-gm plugin may implement.

Every plugin is a module (or object) registered through the entry-point group
`sedna.features`; mark implementations with `sedna.runtime.hookimpl`. Each hook is
documented in `docs/plugin-hooks.md` and has a `test_hook_<name>` test; a test
enforces both, as datasette does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pluggy

from sedna.runtime.plugin_api import PROJECT

if TYPE_CHECKING:
    from sedna.runtime.container import RuntimeContainer
    from sedna.runtime.context import ControllerContext
    from sedna.runtime.plugin_api import Feature

hookspec = pluggy.HookspecMarker(PROJECT)


@hookspec
def sedna_features() -> Sequence[Feature]:
    """Return the features this plugin provides.

    Each `Feature` names itself (the `features:` key in gm.yaml, equal to the entry
    point name), the kinds it controls, the factory that builds its controller from a
    `ControllerContext`, and optionally a validator for its own options. A plugin
    with only cross-cutting hooks returns an empty sequence.
    """
    raise NotImplementedError


@hookspec
def sedna_configure_container(container: RuntimeContainer) -> None:
    """Adjust the runtime container before anything is built from it.

    Called once, after gm.yaml is loaded and before any provider is used; a plugin may
    override providers here (e.g. its own downstream transport or event recorder).
    """


@hookspec
def sedna_adjust_pod(pod: dict[str, Any], job: Mapping[str, Any], worker_type: str) -> None:
    """Change a worker pod in place just before it is created.

    For cross-cutting concerns: tolerations, node selectors, sidecars, labels. `job`
    is the owning resource (read-only); `worker_type` is lower-cased (train, eval,
    inference, ...). Called for every pod of every feature, in plugin order.
    """


@hookspec
def sedna_startup(context: ControllerContext) -> None:
    """This replica is active: features built, caches synced, controllers running.

    With leader election this happens once the replica leads (standbys never call it).
    `context` is the manager-wide context (no feature name, no options).
    """


@hookspec
def sedna_shutdown(context: ControllerContext) -> None:
    """The manager is stopping; called after features stopped, before the runtime closes."""
