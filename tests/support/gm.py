"""The GM under test: the real `sedna.manager.Manager` talking to the API server over HTTP."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Self

import kubernetes
from dependency_injector import providers

from sedna.manager import Manager
from sedna.plugins.loader import discover_plugins
from sedna.runtime import Clock, GMConfig, RuntimeContainer


class GMHarness:
    """The Manager with the given features only (all others disabled), scoped to a namespace.

    `features` maps a feature name to its options; `plugins` maps it to the plugin module
    handed to the Manager. A feature's subclass fills both in from its own arguments.
    """

    def __init__(
        self,
        api_client_factory: Callable[[], kubernetes.client.ApiClient],
        namespace: str,
        *,
        features: Mapping[str, Mapping[str, Any]],
        plugins: Mapping[str, object],
        websocket: Mapping[str, Any] | None = None,
        clock: Clock | None = None,
    ) -> None:
        config: dict[str, Any] = {
            p.name: {"enabled": False} for p in discover_plugins() if p.name not in features
        }
        config.update({name: dict(options) for name, options in features.items()})
        self.config = GMConfig.model_validate(
            {
                "namespace": namespace,
                "minResyncPeriodSeconds": 3600,  # progress must come from events, not resyncs
                "websocket": {
                    "address": "127.0.0.1",
                    "port": 0,
                    "auth": "none",
                    **dict(websocket or {}),
                },
                "metrics": {"enabled": False},
                "features": config,
            }
        )
        self.plugins = dict(plugins)
        self.clock = clock
        self._api_client_factory = api_client_factory
        self.manager: Manager | None = None

    def start(self) -> Self:
        container = RuntimeContainer(config=self.config)
        container.api_client.override(providers.Object(self._api_client_factory()))
        if self.clock is not None:
            container.clock.override(providers.Object(self.clock))
        self.manager = Manager(
            self.config,
            container=container,
            extra_plugins=self.plugins,
            cache_sync_timeout=10,
        )
        self.manager.start()
        return self

    @property
    def port(self) -> int:
        assert self.manager is not None
        return int(self.manager.container.message_layer().port)

    def stop(self) -> None:
        if self.manager is not None:
            self.manager.container.events().flush(2.0)
            informers = self.manager.container.informers()
            self.manager.stop()
            self.manager = None
            # The manager only logs the detector's final verdict (a GM keeps stopping);
            # a test must fail: raises CacheMutationError when the detector is on.
            informers.check_mutations()

    def restart(self) -> Self:
        self.stop()
        return self.start()
