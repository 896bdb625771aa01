"""Running chosen features on the runtime, for embedders: build, sync, serve, run, stop.

`FeatureHost` is what `sedna-gm` itself runs its features on, without what only the
command needs (plugin discovery, gm.yaml, health endpoint, leader election). An
embedding application gives it `Feature` objects directly:

    host = FeatureHost(config, overrides={"downstream": my_send})
    host.add(my_feature, options={"interval": 5})
    with host:                       # start(): contexts ready, caches synced, controllers run
        ctx = host.context("my_feature")
        ...
    # stop(): controllers, edge server, informers, event recorder, in that order

Start order mirrors Sedna's GM: every feature's factory registers its informers and
upstream handlers on its context, the caches sync, the LC websocket server opens
(unless `downstream` was overridden: then nothing listens), then the controllers
start. Stop is the reverse, so a controller never runs on stopped informers and no
Event queued by a controller is lost.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from dependency_injector import providers
from loguru import logger
from pydantic import ValidationError

from sedna.runtime.config import GMConfig, describe_error
from sedna.runtime.container import RuntimeContainer
from sedna.runtime.context import ControllerContext
from sedna.runtime.plugin_api import Feature, FeatureController, FeatureOptionsError
from sedna.runtime.stop_request import StopRequest


class FeatureStartError(RuntimeError):
    """A feature could not be built or the runtime could not start; for the operator."""


class _StartCancelled(Exception):
    """`request_stop` came while `start` waited for the caches."""


def wait_for_stop(stopped: StopRequest) -> None:
    """Block the main thread until `stopped` is set.

    A Python signal handler runs in the main thread only once that thread runs again,
    so the wait is sliced (`StopRequest.wait`): a signal that comes just as the thread
    goes back to sleep, or that another thread takes, is handled within a slice
    instead of never; and the handler's `set` takes no lock the waiting thread holds.
    """
    stopped.wait()


def validate_feature_options(feature: Feature, options: Mapping[str, Any] | None = None) -> Any:
    """A feature's options merged over its defaults and validated as gm.yaml's would be.

    Raises `FeatureOptionsError` naming the first wrong key (relative to the feature's
    section), also for a feature that takes no options but was given some.
    """
    given = dict(options or {})
    merged = {**feature.default_options, **given}
    if feature.validate_options is None:
        if given:
            raise FeatureOptionsError(sorted(given)[0], "unknown option (this feature takes none)")
        return merged
    try:
        return feature.validate_options(merged)
    except FeatureOptionsError:
        raise
    except ValidationError as exc:
        first = describe_error(exc.errors()[0])
        key, _, reason = first.partition(": ")
        raise FeatureOptionsError(key, reason or first) from None


def build_context(
    container: RuntimeContainer,
    config: GMConfig,
    feature_name: str = "",
    options: Any = None,
    workers: int = 1,
) -> ControllerContext:
    """A `ControllerContext` on the container's services (building those not yet built)."""
    c = container
    return ControllerContext(
        config=config,
        kube=c.kube(),
        informers=c.informers(),
        send=c.downstream(),
        upstream=c.upstream(),
        events=c.events(),
        metrics=c.metrics(),
        worker_runtime=c.worker_runtime(),
        clock=c.clock(),
        feature_name=feature_name,
        options=options,
        workers=workers,
    )


@dataclass
class HostedFeature:
    """One feature on the host: its context and, once started, its controller."""

    feature: Feature
    context: ControllerContext
    plugin: str = ""
    controller: FeatureController | None = None

    @property
    def name(self) -> str:
        return self.feature.name


def _start_error(hosted: HostedFeature, exc: Exception) -> FeatureStartError:
    """The feature's factory or its controller's `start` raised: name the feature."""
    who = f"plugin {hosted.plugin}: " if hosted.plugin else ""
    return FeatureStartError(
        f"{who}feature {hosted.name} failed to start: {type(exc).__name__}: {exc}"
    )


class FeatureHost:
    """Chosen features on one runtime container; see the module docstring."""

    def __init__(
        self,
        runtime: GMConfig | RuntimeContainer,
        *,
        config: GMConfig | None = None,
        overrides: Mapping[str, object] | None = None,
        cache_sync_timeout: float = 60.0,
        on_built: Callable[[Sequence[HostedFeature]], None] | None = None,
    ) -> None:
        """A config, or a container with its config; `overrides` replace providers by name.

        An override is any object: `{"downstream": send}` delivers LC messages through
        your own transport, `{"api_client": client}` uses your own kube client,
        `{"clock": FakeClock()}` runs delays in virtual time. Unknown names are errors.
        `on_built(features)` runs once every factory ran, before the informers start:
        the place to observe the features' informers (metrics, audits).
        """
        # A RuntimeContainer() is a DynamicContainer, not an instance of the class.
        if isinstance(runtime, GMConfig):
            self.container: RuntimeContainer = RuntimeContainer(config=runtime)
            self.config = runtime
        else:
            if config is None:
                raise TypeError("a container needs its config: FeatureHost(container, config=...)")
            self.container = runtime
            self.config = config
        for name, value in (overrides or {}).items():
            provider = getattr(self.container, name, None)
            if not isinstance(provider, providers.Provider) or name == "config":
                known = ", ".join(sorted(self.container.providers))
                raise ValueError(f"no provider {name!r} to override (providers: {known})")
            provider.override(providers.Object(value))
        self._sync_timeout = cache_sync_timeout
        self._on_built = on_built
        self.features: list[HostedFeature] = []
        self._running: list[tuple[str, Any]] = []
        self._started = False
        self._stopped = StopRequest()
        self._stop_reason = ""
        self.uses_message_layer = False

    # -- assembly ------------------------------------------------------------------

    def add(
        self,
        feature: Feature,
        options: Mapping[str, Any] | None = None,
        *,
        workers: int = 1,
        validated: bool = False,
        plugin: str = "",
    ) -> ControllerContext:
        """Add a feature before `start`; returns the context its factory will receive.

        `options` are validated by the feature (`FeatureOptionsError` names the key)
        unless `validated` says they already were.
        """
        if self._started:
            raise RuntimeError("add features before start()")
        if any(f.name == feature.name for f in self.features):
            raise ValueError(f"feature {feature.name} is already on this host")
        checked = options if validated else validate_feature_options(feature, options)
        ctx = self.base_context(feature.name, checked, workers)
        self.features.append(HostedFeature(feature, ctx, plugin))
        return ctx

    def base_context(
        self, feature_name: str = "", options: Any = None, workers: int = 1
    ) -> ControllerContext:
        """A context on this host's services (empty `feature_name`: the host-wide one)."""
        return build_context(self.container, self.config, feature_name, options, workers)

    def context(self, name: str) -> ControllerContext:
        return self._hosted(name).context

    def controller(self, name: str) -> FeatureController:
        """The feature's controller, as its factory built it (after `start`)."""
        controller = self._hosted(name).controller
        if controller is None:
            raise RuntimeError(f"feature {name} is not started")
        return controller

    def _hosted(self, name: str) -> HostedFeature:
        for f in self.features:
            if f.name == name:
                return f
        raise KeyError(name)

    # -- lifecycle -----------------------------------------------------------------

    def start(self) -> None:
        """Build every feature, sync the caches, open the edge server, start controllers.

        On failure everything started so far is stopped and `FeatureStartError` says
        which feature or which part failed. A `request_stop` while the caches sync (an
        API server slow or unreachable) stops what started and returns: `started` is
        False and `run` returns at once.
        """
        if self._started:
            return
        if not self._stop_reason:  # a stop asked for before start still counts
            self._stopped.clear()
        self.uses_message_layer = not self.container.downstream.overridden
        try:
            for hosted in self.features:
                try:
                    hosted.controller = hosted.feature.factory(hosted.context)
                except Exception as exc:
                    raise _start_error(hosted, exc) from exc
            if self._on_built is not None:
                self._on_built(tuple(self.features))
            self._start_runtime()
            for hosted in self.features:
                assert hosted.controller is not None
                try:
                    hosted.controller.start()
                except Exception as exc:
                    raise _start_error(hosted, exc) from exc
        except _StartCancelled:
            self.stop()  # `run` then returns at once: the stop was asked for
            return
        except BaseException:
            self.stop()
            raise
        self._started = True

    @property
    def started(self) -> bool:
        """Whether `start` completed (False when a stop came while the caches synced)."""
        return self._started

    def _start_runtime(self) -> None:
        c = self.container
        self._running.append(("event recorder", c.events()))  # stopped last: writes what is queued
        informers = c.informers()
        informers.start()
        self._running.append(("informers", informers))
        if not informers.wait_for_cache_sync(self._sync_timeout, stop=self._stopped):
            if self._stopped.is_set():
                raise _StartCancelled
            raise FeatureStartError(
                f"informer caches did not sync within {self._sync_timeout:.0f} s"
            )
        if self.uses_message_layer:
            layer = c.message_layer()  # dispatches to the container's upstream registry
            layer.start()
            self._running.append(("websocket server", layer))

    def stop_features(self) -> None:
        """Stop the controllers only, newest first (the runtime keeps serving)."""
        for hosted in reversed(self.features):
            if hosted.controller is None:
                continue
            try:
                hosted.controller.stop()
            except Exception as exc:
                logger.warning("feature {} did not stop cleanly: {}", hosted.name, exc)
            hosted.controller = None

    def stop_runtime(self) -> None:
        """Close the edge server, the informers and the event recorder, in that order."""
        while self._running:
            what, part = self._running.pop()
            try:
                part.stop()
            except Exception as exc:
                logger.warning("{} did not stop cleanly: {}", what, exc)

    def stop(self) -> None:
        """Stop the controllers, then the runtime; safe to call twice."""
        self.stop_features()
        self.stop_runtime()
        self._started = False
        self._stopped.set()

    def run(self) -> None:
        """Start, block until `request_stop` (e.g. from a signal handler), then stop."""
        self.start()
        try:
            wait_for_stop(self._stopped)
            if self._stop_reason:
                logger.info("{}, stopping", self._stop_reason)
        finally:
            self.stop()

    def request_stop(self, reason: str = "") -> None:
        """Ask `run` to return; safe from a signal handler (it does not log)."""
        self._stop_reason = self._stop_reason or reason
        self._stopped.set()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
