"""A typed facade over the hook relay, so mypy checks every call site (as tox 4 does)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import pluggy

if TYPE_CHECKING:
    from sedna.runtime.container import RuntimeContainer
    from sedna.runtime.context import ControllerContext
    from sedna.runtime.plugin_api import Feature


class Hooks:
    def __init__(self, pm: pluggy.PluginManager) -> None:
        self._pm = pm

    @property
    def plugin_manager(self) -> pluggy.PluginManager:
        return self._pm

    def features(self) -> list[tuple[str, Feature]]:
        """Every (plugin name, feature) pair, in registration order."""
        out: list[tuple[str, Feature]] = []
        # Called impl by impl (pluggy runs them last-registered first) to keep the owner.
        for impl in reversed(self._pm.hook.sedna_features.get_hookimpls()):
            features = cast("Sequence[Feature]", impl.function())
            out.extend((impl.plugin_name, f) for f in features)
        return out

    def configure_container(self, container: RuntimeContainer) -> None:
        self._pm.hook.sedna_configure_container(container=container)

    def adjust_pod(self, pod: dict[str, Any], job: Mapping[str, Any], worker_type: str) -> None:
        self._pm.hook.sedna_adjust_pod(pod=pod, job=job, worker_type=worker_type)

    def startup(self, context: ControllerContext) -> None:
        self._pm.hook.sedna_startup(context=context)

    def shutdown(self, context: ControllerContext) -> None:
        self._pm.hook.sedna_shutdown(context=context)
