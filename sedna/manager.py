"""Assembles the runtime from gm.yaml and the installed plugins, runs it, shuts it down.

The CLI is one user of this class; embedding applications are the other. Order of
start mirrors Sedna's GM: features wire their informers and upstream handlers, the
caches sync, the edge server listens, then the controllers' workers start.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dependency_injector import providers
from loguru import logger

from sedna.plugins import HookError, LoadedPlugins, PluginError, load_plugins
from sedna.plugins.kinds import KindsUnknown, check_foreign_kinds, warn_unreconciled
from sedna.runtime.api_reachability import APIReachability
from sedna.runtime.config import GMConfig
from sedna.runtime.container import RuntimeContainer
from sedna.runtime.context import ControllerContext
from sedna.runtime.health import HealthServer
from sedna.runtime.host import (
    FeatureHost,
    FeatureStartError,
    HostedFeature,
    build_context,
    wait_for_stop,
)
from sedna.runtime.kube import NODES, KubeClient, KubeConfigError
from sedna.runtime.leader import LeaderElector
from sedna.runtime.observability import informers_of
from sedna.runtime.plugin_api import FeatureController
from sedna.runtime.stop_request import StopRequest
from sedna.startup import StartupError, listen_errors, token_readiness


@dataclass
class _RunningFeature:
    name: str
    plugin: str
    controller: FeatureController
    kinds: tuple[str, ...] = field(default_factory=tuple)


class Manager:
    def __init__(
        self,
        config: GMConfig,
        *,
        container: RuntimeContainer | None = None,
        extra_plugins: Mapping[str, object] | None = None,
        config_source: str = "gm.yaml",
        cache_sync_timeout: float = 60.0,
        use_entry_points: bool = True,
        plugins: LoadedPlugins | None = None,
    ) -> None:
        """`plugins`, if given, are used as loaded (the CLI loads them before anything starts)."""
        self.config = config
        self.container = container if container is not None else RuntimeContainer(config=config)
        if container is not None:
            self.container.config.override(providers.Object(config))
        self._extra_plugins = dict(extra_plugins or {})
        self._use_entry_points = use_entry_points
        self._source = config_source
        self._sync_timeout = cache_sync_timeout
        self.plugins: LoadedPlugins | None = plugins
        self.features: list[_RunningFeature] = []
        self.health: HealthServer | None = None
        self._stopped = StopRequest()
        self._active = threading.Event()  # features built and controllers running
        self._startup_called = False  # the plugins' startup hooks were called
        self._stop_reason = ""
        # Set when activation on the elector's thread failed for an operator reason.
        self.failure: str | None = None
        self._started = False
        self._uses_message_layer = False
        # What was started, so stop() closes exactly that (providers build lazily).
        self._running: list[tuple[str, Any]] = []
        self._host: FeatureHost | None = None  # the features and the runtime they run on
        # Leader election: controllers start on the elector's thread, stop() on the caller's.
        self.elector: LeaderElector | None = None
        self._activation_lock = threading.Lock()
        self._shutting_down = False

    @property
    def uses_message_layer(self) -> bool:
        """False when the downstream transport was overridden (no websocket server)."""
        return self._uses_message_layer

    # -- assembly ---------------------------------------------------------------------

    def load(self) -> LoadedPlugins:
        """Import enabled plugins and validate their options (no I/O beyond imports)."""
        if self.plugins is None:
            self.plugins = load_plugins(
                self.config,
                source=self._source,
                extra_plugins=self._extra_plugins,
                use_entry_points=self._use_entry_points,
            )
        return self.plugins

    def context(
        self, feature_name: str = "", options: Any = None, workers: int = 1
    ) -> ControllerContext:
        return build_context(self.container, self.config, feature_name, options, workers)

    def start(self) -> None:
        """Start serving; with leader election, only the leader builds and runs features.

        A standby keeps only its health endpoint and its candidacy: no caches, no edge
        server, no controllers, so nothing it does can race the leader (LCs reach only
        the leader, because a standby is not ready).
        """
        if self._started:
            return
        self._shutting_down = False
        plugins = self.load()
        hooks = plugins.hooks
        try:
            hooks.configure_container(self.container)
        except HookError as exc:  # a plugin's error, named like any other loading error
            raise StartupError(str(exc)) from exc
        if not self.container.pod_adjusters.overridden:
            self.container.pod_adjusters.override(providers.Object((hooks.adjust_pod,)))
        if self.config.credentials.injection == "env":
            logger.warning(
                "credentials.injection is env: S3 keys are written as plain values into pod "
                "specs (Sedna's behaviour); use secretKeyRef unless edge nodes cannot resolve it"
            )
        self._uses_message_layer = not self.container.downstream.overridden
        try:
            kube = self.container.kube()
        except KubeConfigError as exc:  # an operator error: one line, no traceback
            raise StartupError(f"cannot configure the Kubernetes client: {exc}") from None
        self._check_foreign_kinds(plugins, kube)
        if plugins.left_off:
            logger.info(
                "installed features left off by the config: {}", ", ".join(plugins.left_off)
            )
        try:
            self._start_health()
            if self.config.leaderElection.enabled:
                self._start_leader_election()
            else:
                self.container.metrics().leader.set(1)
                self._activate()
        except Exception:
            self.stop()
            raise
        self._started = True
        if not self._stopped.is_set():  # a stop that came while the caches synced: exit now
            self._warn_unreconciled(plugins, kube)

    def _check_foreign_kinds(self, plugins: LoadedPlugins, kube: KubeClient) -> None:
        """Fail on a claimed kind the cluster lacks, before anything starts."""
        try:
            check_foreign_kinds(plugins.foreign_kinds(), kube)
        except KindsUnknown as exc:
            raise StartupError(str(exc)) from None
        except Exception as exc:  # the API server is not reachable: the informers will say so
            logger.warning("cannot check the installed kinds: {}", exc)

    def _warn_unreconciled(self, plugins: LoadedPlugins, kube: KubeClient) -> None:
        """Warn about installed kinds that nobody reconciles: advice, so it comes once the
        GM has started (a ready GM does not wait for it)."""
        installed = [p.name for p in plugins.discovered]
        try:
            warn_unreconciled(kube, plugins.reconciled_kinds(), installed)
        except Exception as exc:
            logger.warning("cannot check the installed kinds: {}", exc)

    def _activate(self) -> None:
        """Build the features, sync the caches, open the edge server, run the controllers."""
        with self._activation_lock:
            if self._shutting_down:
                return
            plugins = self.load()
            host = FeatureHost(
                self.container,
                config=self.config,
                cache_sync_timeout=self._sync_timeout,
                on_built=self._features_built,
            )
            self._host = host
            if self._stopped.is_set():  # a stop came before activation: keep it
                host.request_stop(self._stop_reason)
            for loaded in plugins.features:
                host.add(
                    loaded.feature,
                    loaded.options,
                    workers=loaded.workers,
                    validated=True,
                    plugin=loaded.plugin,
                )
            ws = self.config.websocket
            try:
                with listen_errors("websocket.port", ws.address, ws.port):
                    host.start()
            except FeatureStartError as exc:
                raise StartupError(str(exc)) from exc
            if not host.started:
                return  # stopped while the caches synced; `run` stops the rest
            self._bind_lc_metrics(host)
            self._add_readiness(host)
            self._startup_called = True  # from here on, `stop` gives the plugins shutdown
            try:
                plugins.hooks.startup(self.context())
            except HookError as exc:
                raise StartupError(str(exc)) from exc
            self._active.set()
        logger.info("sedna-gm started with {} feature(s)", len(self.features))

    def _observe_features(self) -> None:
        """Job gauges and stage transitions over the informers the features made."""
        c = self.container
        metrics = c.metrics()
        metrics.job_states.clock = c.clock()
        metrics.job_states.clear()
        informers = c.informers().informers
        for feature in self.features:
            for informer in informers_of(informers, feature.kinds):
                metrics.job_states.track(feature.name, informer)
                metrics.stage_transitions.watch(informer)

    def _start_health(self) -> None:
        m = self.config.metrics
        if not m.enabled:
            return
        try:
            auth = self.container.metrics_authenticator()
        except ValueError as exc:
            raise StartupError(str(exc)) from None
        if auth is None:
            logger.warning(
                "metrics.auth is none: /metrics (node and job names) answers anyone who "
                "reaches {}:{}; set metrics.tokenFile or metrics.tokenSecret",
                m.address,
                m.port,
            )
        self.health = HealthServer(
            m.address,
            m.port,
            self.container.metrics().registry,
            authenticator=auth,
            max_connections=m.maxConnections,
            max_per_peer=m.maxConnectionsPerPeer,
            request_timeout=m.requestTimeoutSeconds,
        )
        self.health.add_liveness("ping", lambda: True)
        self.health.add_readiness("active", self._active.is_set)
        # asked on demand: a GM that cannot reach its API is not ready (no idle polling)
        self.health.add_readiness("apiserver", APIReachability(self.container.kube()))
        with listen_errors("metrics.port", m.address, m.port):
            self.health.start()
        logger.info(
            "serving /metrics, /healthz, /readyz on {}:{}",
            self.config.metrics.address,
            self.health.port,
        )

    def _features_built(self, hosted: Sequence[HostedFeature]) -> None:
        """Every factory ran; the informers start next."""
        assert self.plugins is not None
        for loaded, feature in zip(self.plugins.features, hosted, strict=True):
            assert feature.controller is not None
            self.features.append(
                _RunningFeature(
                    loaded.feature.name,
                    loaded.plugin,
                    feature.controller,
                    tuple(loaded.feature.kinds),
                )
            )
            logger.info(
                "feature {} (plugin {}) ready: kinds {}, {} worker(s)",
                loaded.feature.name,
                loaded.plugin,
                ", ".join(loaded.feature.kinds) or "-",
                loaded.workers,
            )
        self._observe_features()

    def _bind_lc_metrics(self, host: FeatureHost) -> None:
        """LC connection gauges for the nodes the cluster knows (bounded label set)."""
        if not host.uses_message_layer:
            return
        c = self.container
        layer = c.message_layer()
        nodes = c.informers().informer(NODES, metadata_only=True)
        c.metrics().lc_nodes.bind(
            layer.connected_nodes,
            lambda: [str(n["metadata"]["name"]) for n in nodes.lister.list()],
        )

    def _add_readiness(self, host: FeatureHost) -> None:
        if self.health is None:
            return
        informers = self.container.informers()
        self.health.add_readiness(
            "informer-sync", lambda: all(i.has_synced() for i in informers.informers)
        )
        if host.uses_message_layer:
            layer = self.container.message_layer()
            self.health.add_readiness("websocket", lambda: layer.port > 0)
            tokens = self.container.token_provider()
            if tokens is not None:
                self.health.add_readiness(
                    "lc-token", token_readiness(self.config.websocket, tokens)
                )

    def _start_leader_election(self) -> None:
        """The leader activates; a replica that loses the lease exits, as client-go's do.

        Activation runs on a thread of its own: cache sync may outlast the renew deadline,
        and the elector's callbacks must return quickly.
        """

        def activate() -> None:
            try:
                self._activate()
            except StartupError as exc:  # an operator error: one line, and exit 2
                self.failure = str(exc)
                self.request_stop(f"activation failed: {exc}")
            except Exception as exc:
                logger.exception("activating after acquiring leadership failed")
                self.request_stop(f"activation failed: {type(exc).__name__}: {exc}")

        def started() -> None:
            threading.Thread(target=activate, name="activate", daemon=True).start()

        def stopped() -> None:
            with self._activation_lock:
                if not self._shutting_down:
                    self.request_stop("lost leadership")

        c = self.container
        try:
            elector = LeaderElector(
                c.kube(),
                self.config.leaderElection,
                clock=c.clock(),
                on_started_leading=started,
                on_stopped_leading=stopped,
                metrics=c.metrics(),
            )
        except ValueError as exc:
            raise StartupError(str(exc)) from exc
        self.elector = elector
        if self.health is not None:
            self.health.add_liveness("leader-election", elector.check)
        elector.run()
        self._running.append(("leader election", elector))  # released after everything else

    # -- running ----------------------------------------------------------------------

    def run(self) -> None:
        """Start and block until `request_stop`; then stop cleanly."""
        self.start()
        try:
            wait_for_stop(self._stopped)
            if self._stop_reason:
                logger.info("{}, stopping", self._stop_reason)
        finally:
            self.stop()

    def request_stop(self, reason: str = "") -> None:
        """Ask `run` to return; safe from a signal handler (it does not log).

        A start still waiting for the caches (an API server down) ends too.
        """
        self._stop_reason = self._stop_reason or reason
        self._stopped.set()
        host = self._host
        if host is not None:
            host.request_stop(self._stop_reason)

    def stop(self) -> None:
        """Stop everything that was started, in reverse order; safe to call twice."""
        with self._activation_lock:
            self._shutting_down = True
        host = self._host
        if host is not None:
            host.stop_features()
        if self.plugins is not None and self._startup_called:
            # Every plugin that started gets its call (also when another's startup hook
            # failed); one failing does not keep the others from closing.
            self._startup_called = False
            for failure in self.plugins.hooks.shutdown(self.context()):
                logger.warning("{}", failure)
        self.features = []
        if self.health is not None:
            self.health.stop()
            self.health = None
        if host is not None:
            host.stop_runtime()
            self._host = None
        while self._running:
            what, part = self._running.pop()
            try:
                part.stop()
            except Exception as exc:
                logger.warning("{} did not stop cleanly: {}", what, exc)
        self._active.clear()
        self.container.metrics().job_states.clear()
        self._started = False
        self._stopped.set()


__all__ = ["Manager", "PluginError", "StartupError"]
