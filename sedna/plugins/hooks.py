"""A typed facade over the hook relay, so mypy checks every call site (as tox 4 does).

Each hook implementation is called on its own, in pluggy's order (last registered
first), rather than through the relay: a failure then names the plugin whose hook
raised, where pluggy's relay would only pass the bare exception on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from sedna.runtime.container import RuntimeContainer
    from sedna.runtime.context import ControllerContext
    from sedna.runtime.plugin_api import Feature


class HookError(Exception):
    """A plugin's hook implementation failed; the message names the plugin and the hook."""

    def __init__(self, plugin: str, hook: str, reason: str) -> None:
        super().__init__(f"plugin {plugin}: {hook} failed: {reason}")
        self.plugin = plugin
        self.hook = hook
        self.reason = reason

    @classmethod
    def raised(cls, plugin: str, hook: str, exc: BaseException) -> HookError:
        return cls(plugin, hook, f"{type(exc).__name__}: {exc}")


class Hooks:
    def __init__(self, pm: pluggy.PluginManager) -> None:
        self._pm = pm
        self._not_started: set[str] = set()

    @property
    def plugin_manager(self) -> pluggy.PluginManager:
        return self._pm

    def _impls(self, hook: str) -> list[pluggy.HookImpl]:
        """The implementations of `hook` in the order pluggy's relay would call them."""
        return list(reversed(getattr(self._pm.hook, hook).get_hookimpls()))

    def _call(self, impl: pluggy.HookImpl, hook: str, kwargs: Mapping[str, Any]) -> Any:
        """One implementation, given the arguments it asks for (pluggy allows a subset)."""
        try:
            return impl.function(*(kwargs[name] for name in impl.argnames))
        except Exception as exc:
            raise HookError.raised(impl.plugin_name, hook, exc) from exc

    def _call_each(self, hook: str, **kwargs: Any) -> None:
        for impl in self._impls(hook):
            self._call(impl, hook, kwargs)

    def features(self) -> list[tuple[str, Feature]]:
        """Every (plugin name, feature) pair, in pluggy's call order.

        Raises `HookError` naming the plugin whose `sedna_features` raised or returned
        something that is not a sequence.
        """
        out: list[tuple[str, Feature]] = []
        for impl in self._impls("sedna_features"):
            features = self._call(impl, "sedna_features", {})
            if not isinstance(features, Sequence) or isinstance(features, str | bytes):
                raise HookError(
                    impl.plugin_name,
                    "sedna_features",
                    f"returned {type(features).__name__}, expected a sequence of "
                    "sedna.runtime.Feature (an empty one for no features)",
                )
            out.extend((impl.plugin_name, f) for f in features)
        return out

    def configure_container(self, container: RuntimeContainer) -> None:
        self._call_each("sedna_configure_container", container=container)

    def adjust_pod(self, pod: dict[str, Any], job: Mapping[str, Any], worker_type: str) -> None:
        """Every plugin's adjustment; the first that raises stops the pod's creation.

        The `HookError` reaches the controller creating the pod, so its log line and its
        Warning Event name the plugin and the hook, not only the feature; the controller
        retries with backoff, as for any failed sync.
        """
        self._call_each("sedna_adjust_pod", pod=pod, job=job, worker_type=worker_type)

    def startup(self, context: ControllerContext) -> None:
        """Every plugin's startup hook in order; the first that raises stops the start.

        The plugins whose startup hook did not complete (the one that raised and those
        after it) are remembered: `shutdown` leaves them out, as pytest tears down only
        the fixtures that were set up, while those that started still get to close.
        """
        impls = self._impls("sedna_startup")
        self._not_started = {impl.plugin_name for impl in impls}
        for impl in impls:
            self._call(impl, "sedna_startup", {"context": context})
            self._not_started.discard(impl.plugin_name)

    def shutdown(self, context: ControllerContext) -> list[HookError]:
        """Every plugin's shutdown hook, even after one failed; returns the failures.

        After a start that failed in a startup hook, the plugins whose startup hook did
        not complete get no shutdown call (a plugin without a startup hook gets one).
        """
        failures: list[HookError] = []
        for impl in self._impls("sedna_shutdown"):
            if impl.plugin_name in self._not_started:
                continue
            try:
                self._call(impl, "sedna_shutdown", {"context": context})
            except HookError as exc:
                failures.append(exc)
        return failures
