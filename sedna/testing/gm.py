"""The GM under test: the real `sedna.manager.Manager` talking to the API server over HTTP."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Self

import kubernetes
from dependency_injector import providers

from sedna.manager import Manager
from sedna.plugins.loader import discover_plugins
from sedna.rbac import Grant, grants
from sedna.runtime import Clock, GMConfig, RuntimeContainer

# the GM's service account as `sedna-gm rbac` names it: the user of kube's 403 messages
GM_USER = "system:serviceaccount:sedna:sedna-gm"


class GMHarness:
    """The Manager with the given features only (all others disabled), scoped to a namespace.

    `features` maps a feature name to its options (`workers` too); `plugins` maps a
    name to a plugin object handed to the Manager directly. A feature without one there
    is loaded through its installed entry point, exactly as `sedna-gm` loads it. The
    LC websocket listens on 127.0.0.1 on an OS-chosen port (`port`), without auth
    unless `websocket` says otherwise; metrics are off; resyncs are an hour apart, so
    progress in a test comes from events, not from resyncs.

    Given the in-process `apiserver`, the GM gets a token of its own that may do only
    what the RBAC generated for these features grants: the server answers anything else
    with kube's 403, and `stop` fails the test with one line per call refused (verb,
    resource, namespace). A feature that forgot an `ApiAccess` fails here, not with
    403s on a cluster.
    """

    def __init__(
        self,
        api_client_factory: Callable[[], kubernetes.client.ApiClient],
        namespace: str,
        *,
        features: Mapping[str, Mapping[str, Any]],
        plugins: Mapping[str, object] | None = None,
        websocket: Mapping[str, Any] | None = None,
        clock: Clock | None = None,
        apiserver: Any | None = None,
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
        self.plugins = dict(plugins or {})
        self.clock = clock
        self._api_client_factory = api_client_factory
        self.apiserver = apiserver
        self._token: str | None = None
        # calls the server refused for want of a declared grant, in order, without repeats
        self.denied: list[str] = []
        self.manager: Manager | None = None

    def start(self) -> Self:
        container = RuntimeContainer(config=self.config)
        if self.clock is not None:
            container.clock.override(providers.Object(self.clock))
        self.manager = Manager(
            self.config,
            container=container,
            extra_plugins=self.plugins,
            cache_sync_timeout=10,
        )
        client = self._api_client_factory()
        issue = getattr(self.apiserver, "issue_token", None)
        if callable(issue):
            features = [f.feature for f in self.manager.load().features]
            self._token = issue(GM_USER, self._authorizer(grants(self.config, features)))
            _use_token(client, self._token)
        container.api_client.override(providers.Object(client))
        self.manager.start()
        return self

    def _authorizer(self, allowed: list[Grant]) -> Callable[[Any], bool]:
        """RBAC's answer for one request: some grant allows it (resourceNames too)."""

        def authorize(attrs: Any) -> bool:
            for grant in allowed:
                if grant.allows(attrs.group, attrs.resource, attrs.verb, attrs.namespace) and (
                    not grant.names or attrs.name in grant.names
                ):
                    return True
            line = str(attrs)
            if line not in self.denied:
                self.denied.append(line)
            return False

        return authorize

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
        if self._token is not None and self.apiserver is not None:
            self.apiserver.revoke_token(self._token)
            self._token = None
        if self.denied:
            refused = "; ".join(self.denied)
            self.denied = []
            raise AssertionError(
                f"forbidden: the GM called {refused}, which its features' declared access "
                "does not grant (add an ApiAccess to the Feature)"
            )

    def restart(self) -> Self:
        self.stop()
        return self.start()


def _use_token(client: kubernetes.client.ApiClient, token: str) -> None:
    """Make every request of `client` carry `token`, the runtime's raw requests too."""
    cfg = client.configuration
    cfg.api_key = {"authorization": token}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    client.set_default_header("Authorization", f"Bearer {token}")  # type: ignore[no-untyped-call]
