"""Embedded mode: the GM brings its own API server and edge nodes, like k3s brings its SQLite.

`sedna-gm --config config/gm.yaml` must show a newcomer the GM's real job without a
cluster or an edge node. `prepare()` starts the in-process API server persisted to
`<stateDir>/state.db`, installs the project's CRDs for all of Sedna's kinds, seeds
the `apply` manifests (create if absent: a restart keeps what the user changed),
provides a token for the simulated LCs and writes `<stateDir>/kubeconfig`; the
returned config points `kubeConfig` at it, so the manager then runs exactly as
against a real cluster (official client over HTTP, informers, websocket layer).
`start_simulation()` adds a Deployment controller stand-in (pods and status for every
Deployment) and a kubelet and an LC stand-in per simulated node (a kubelet only for a
node in `simulate.externalLC`, whose LC is a real one); they use only the API and the
websocket, so nothing inside the GM knows it is simulated.

The CLI imports this module only when `embedded.enabled` is set.
"""

from __future__ import annotations

import base64
import contextlib
import os
import secrets
import ssl
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from loguru import logger

from sedna.embedded.apiserver import APIServer
from sedna.embedded.apiserver.housekeeping import DEFAULT_INTERVAL as HOUSEKEEPING_INTERVAL
from sedna.embedded.crds import crd_manifests
from sedna.embedded.deployments import DeploymentController
from sedna.embedded.kubelet import SimulatedKubelet
from sedna.embedded.lc import SimulatedLC
from sedna.embedded.manifests import ManifestError, create_if_absent, load_manifests
from sedna.embedded.plays import default_plays
from sedna.embedded.pod_logs import secure_log_dir
from sedna.embedded.state_lock import StateDirInUse, StateLock
from sedna.runtime.config import ConfigError, GMConfig
from sedna.runtime.controller import retry_all_waiting
from sedna.runtime.kube import (
    NAMESPACES,
    SECRETS,
    ApiError,
    KubeClient,
    api_client_from_config,
)
from sedna.runtime.messaging import file_token_provider
from sedna.tokens import issue_node_token

KUBECONFIG_NAME = "kubeconfig"
STATE_DB_NAME = "state.db"
LOGS_DIR_NAME = "logs"  # container logs: the kubelets write them, the server serves them
TOKEN_FILE_NAME = "lc-token"
METRICS_TOKEN_FILE_NAME = "metrics-token"  # /metrics wants it as a bearer token
API_TOKEN_FILE_NAME = "apiserver-token"  # the token the kubeconfig carries
API_TOKENS_FILE_NAME = "apiserver-tokens"  # more tokens, one a line, read per request
PKI_DIR_NAME = "pki"


class EmbeddedMode:
    """Owns the embedded API server and the simulated nodes for one GM process."""

    def __init__(
        self, config: GMConfig, *, cert_clock: Callable[[], datetime] | None = None
    ) -> None:
        self.config = config
        # the wall clock of the API server's certificates (their renewal); tests move it
        self._cert_clock = cert_clock
        self.settings = config.embedded
        self.state_dir = Path(self.settings.stateDir)
        self.kubeconfig = self.state_dir / KUBECONFIG_NAME
        self.server: APIServer | None = None
        self.kube: KubeClient | None = None
        self.lc_token: str | None = None
        # auth: node: each simulated node's own token, issued at prepare()
        self.node_tokens: dict[str, str] = {}
        self.kubelets: list[SimulatedKubelet] = []
        self.lcs: list[SimulatedLC] = []
        self.deployments: DeploymentController | None = None
        self._prepared: GMConfig | None = None
        self._lock: StateLock | None = None

    # -- before the manager --------------------------------------------------------------

    def prepare(self) -> GMConfig:
        """Start the API server and seed it; return the config the manager should run with."""
        s = self.settings
        try:
            # Private: the store holds every object, Secrets included (like k3s's data dir).
            self.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(self.state_dir, 0o700)  # also when an older run left it open
        except OSError as exc:
            raise ConfigError(f"embedded.stateDir: cannot create {s.stateDir}: {exc}") from None
        try:
            self._lock = StateLock(self.state_dir)
        except StateDirInUse as exc:
            raise ConfigError(f"embedded.stateDir: {exc}") from None
        except OSError as exc:
            raise ConfigError(f"embedded.stateDir: cannot lock {s.stateDir}: {exc}") from None
        try:
            secure_log_dir(self.state_dir / LOGS_DIR_NAME)
            return self._start_server()
        except OSError as exc:
            self._release()
            raise ConfigError(f"embedded.stateDir: {exc}") from None
        except BaseException:
            self._release()
            raise

    def _start_server(self) -> GMConfig:
        s = self.settings
        db = self.state_dir / STATE_DB_NAME
        server = APIServer(
            s.address,
            s.port,
            db_path=db,
            pod_logs=self.state_dir / LOGS_DIR_NAME,
            tokens=[self._api_token()],
            token_source=file_token_provider(self.state_dir / API_TOKENS_FILE_NAME, optional=True),
            pki_dir=self.state_dir / PKI_DIR_NAME,
            event_ttl=s.eventTTLSeconds,
            terminated_pod_threshold=s.terminatedPodGCThreshold,
            housekeeping_interval=HOUSEKEEPING_INTERVAL,
            cert_clock=self._cert_clock,
            max_watches=s.maxWatches,
            max_watches_per_client=s.maxWatchesPerClient,
            body_timeout=s.requestBodyTimeoutSeconds,
        )
        try:
            server.start()
        except OSError as exc:
            server.stop()
            raise ConfigError(
                f"embedded.port: cannot listen on {s.address}:{s.port}: {exc.strerror or exc} "
                "(set embedded.port: 0 to pick a free port)"
            ) from None
        self.server = server
        server.on_ca_renewed(lambda _cert: self._rewrite_kubeconfig())
        # A kubeconfig left by the last run names a server that is not up yet. Removed only
        # once this server listens (and holds the state lock): a GM that fails on the lock
        # or the port must leave the running GM's kubeconfig alone.
        with contextlib.suppress(FileNotFoundError):
            self.kubeconfig.unlink()
        try:
            return self._seed(server, db)
        except BaseException:
            self.stop()
            raise

    def _rewrite_kubeconfig(self) -> None:
        """After the CA certificate was renewed: the kubeconfig hands out the new one.

        Clients that read the old kubeconfig keep working: the CA keeps its key, so the
        serving certificate verifies against either."""
        server = self.server
        if server is None or self._prepared is None:
            return  # not yet written: _seed writes it with the current CA
        tmp = self.kubeconfig.with_name(KUBECONFIG_NAME + ".renew")
        server.write_kubeconfig(tmp)
        os.replace(tmp, self.kubeconfig)
        logger.info("embedded: CA certificate renewed, kubeconfig {} rewritten", self.kubeconfig)

    def _api_token(self) -> str:
        """The API server's token, kept across restarts so an old kubeconfig stays valid."""
        path = self.state_dir / API_TOKEN_FILE_NAME
        token = _first_token(path)
        if token is None:
            token = secrets.token_urlsafe(32)
            _write_private(path, token + "\n")
        os.chmod(path, 0o600)
        return token

    def _seed(self, server: APIServer, db: Path) -> GMConfig:
        for crd in crd_manifests():
            server.install_crd(crd)
        tmp = self.kubeconfig.with_name(KUBECONFIG_NAME + ".tmp")
        try:
            return self._seed_with(server, db, tmp)
        finally:
            # Renamed into place on success; a failed start leaves no half-written file.
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()

    def _seed_with(self, server: APIServer, db: Path, tmp: Path) -> GMConfig:
        server.write_kubeconfig(tmp)
        os.chmod(tmp, 0o600)
        self.kube = KubeClient(api_client_from_config(str(tmp), ""), pool_size=8)
        created = 0
        try:
            manifests = load_manifests(self.settings.apply)
            for m in manifests:
                if create_if_absent(self.kube, m):
                    created += 1
                    logger.info("embedded: created {} (from {})", m.label, m.source)
        except ManifestError as exc:
            raise ConfigError(f"embedded.apply: {exc}") from None
        config = self._with_metrics_auth(self._with_lc_auth(self.config))
        os.replace(tmp, self.kubeconfig)
        logger.info(
            "embedded: API server {} (state {}), {} object(s) seeded, kubeconfig {}",
            server.url,
            db,
            created,
            self.kubeconfig,
        )
        self._prepared = config.model_copy(
            update={"kubeConfig": str(self.kubeconfig), "master": ""}
        )
        return self._prepared

    def _with_lc_auth(self, config: GMConfig) -> GMConfig:
        """Give the simulated LCs the token the GM will check (generate one if none is set)."""
        ws = config.websocket
        if ws.auth == "none":
            return config
        if ws.auth == "node":
            self._issue_node_tokens(ws.nodeTokenNamespace)
            return config
        if ws.tokenFile:
            self.lc_token = _first_token(Path(ws.tokenFile))
            return config
        if ws.tokenSecret:
            self.lc_token = self._secret_token(ws.tokenSecret)
            return config
        path = self.state_dir / TOKEN_FILE_NAME
        token = _first_token(path)
        if token is None:
            token = secrets.token_urlsafe(32)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(token + "\n")
        os.chmod(path, 0o600)
        self.lc_token = token
        logger.info("embedded: LC token in {} (websocket.tokenFile)", path)
        return config.model_copy(
            update={"websocket": ws.model_copy(update={"tokenFile": str(path)})}
        )

    def _with_metrics_auth(self, config: GMConfig) -> GMConfig:
        """Issue the /metrics token (kept across restarts) unless gm.yaml names a source."""
        m = config.metrics
        if not m.enabled or m.auth == "none" or m.tokenFile or m.tokenSecret:
            return config
        path = self.state_dir / METRICS_TOKEN_FILE_NAME
        if _first_token(path) is None:
            _write_private(path, secrets.token_urlsafe(32) + "\n")
        os.chmod(path, 0o600)
        logger.info("embedded: /metrics bearer token in {} (metrics.tokenFile)", path)
        return config.model_copy(update={"metrics": m.model_copy(update={"tokenFile": str(path)})})

    def _issue_node_tokens(self, namespace: str) -> None:
        """A token per simulated node, in its Secret, as `sedna-gm token create` makes it.

        Issued again at every start: the GM reads the Secret per connection, so the
        simulated LCs and the GM always agree.
        """
        assert self.kube is not None
        with contextlib.suppress(ApiError):  # exists already
            self.kube.resource(NAMESPACES).create(None, {"metadata": {"name": namespace}})
        for node in self.settings.simulate.nodes:
            self.node_tokens[node] = issue_node_token(self.kube, node, namespace)
        if self.node_tokens:
            logger.info(
                "embedded: issued LC tokens for node(s) {} (Secrets in namespace {})",
                ", ".join(self.node_tokens),
                namespace,
            )

    def _secret_token(self, ref: str) -> str | None:
        ns, _, name = ref.partition("/")
        if self.kube is None:
            return None
        try:
            secret = self.kube.resource(SECRETS).get(ns, name)
        except ApiError:
            return None
        raw = (secret.get("data") or {}).get("token")
        if isinstance(raw, str):
            text = base64.b64decode(raw).decode("utf-8", "replace")
        else:
            text = str((secret.get("stringData") or {}).get("token") or "")
        return next((t.strip() for t in text.splitlines() if t.strip()), None)

    # -- after the manager started ---------------------------------------------------

    def start_simulation(self, manager: Any) -> None:
        """Start a kubelet stand-in per simulated node, and an LC stand-in unless it is external.

        A node in `simulate.externalLC` gets its kubelet only: its LC is a real one (such
        as Sedna's `sedna-lc`) that dials the GM's websocket as that node.
        """
        if self.kube is None or self._prepared is None:
            raise RuntimeError("EmbeddedMode.prepare() must run first")
        self._add_store_readiness(manager)
        self.deployments = DeploymentController(self.kube)
        self.deployments.start()
        nodes = self.settings.simulate.nodes
        if not nodes:
            return
        sim = self.settings.simulate
        url, ssl_ctx = self._gm_url(manager)
        for node in nodes:
            lc: SimulatedLC | None = None
            if node not in sim.externalLC:
                lc = SimulatedLC(
                    node,
                    url,
                    token=self.node_tokens.get(node, self.lc_token),
                    kube=self.kube,
                    growth_per_second=sim.datasetGrowthPerSecond,
                    tick_seconds=sim.jobTickSeconds,
                    dataset_poll_seconds=sim.datasetPollSeconds,
                    ssl_context=ssl_ctx,
                    plays=default_plays(),
                )
            kubelet = SimulatedKubelet(
                node,
                self.kube,
                pod_start_seconds=sim.podStartSeconds,
                pod_run_seconds=sim.podRunSeconds,
                # a real LC hears from the workers themselves (its REST API)
                on_worker_finished=lc.worker_finished if lc is not None else None,
                log_dir=self.state_dir / LOGS_DIR_NAME,
            )
            kubelet.start()
            self.kubelets.append(kubelet)
            if lc is not None:
                lc.start()
                self.lcs.append(lc)
        simulated = [n for n in nodes if n not in sim.externalLC]
        if simulated:
            logger.info(
                "embedded: simulating node(s) {} (kubelet + LC each), LCs dial {}",
                ", ".join(simulated),
                url,
            )
        if sim.externalLC:
            auth = self._prepared.websocket.auth
            logger.info(
                "embedded: node(s) {}: kubelet stand-in only, waiting for their LC at {} "
                "(websocket.auth: {})",
                ", ".join(sim.externalLC),
                url,
                auth,
            )
            if auth != "none":
                logger.warning(
                    "embedded: Sedna's LC sends no token, so websocket.auth {} refuses it; "
                    "set websocket.auth: none to run it (see docs/real-lc.md)",
                    auth,
                )

    def _add_store_readiness(self, manager: Any) -> None:
        """The GM is not ready while its embedded store cannot write (a full disk)."""
        health = getattr(manager, "health", None)
        server = self.server
        if health is None or server is None:
            return

        def check() -> tuple[bool, str]:
            error = server.store_error
            return (True, "") if error is None else (False, error)

        health.add_readiness("embedded-store", check)
        # Controllers back off 10 s doubling to 360 s: when the disk has room again, the
        # jobs whose writes it refused go on at once, not after the rest of their wait.
        server.store.health.on_recovered.append(_retry_waiting_syncs)

    def _gm_url(self, manager: Any) -> tuple[str, ssl.SSLContext | None]:
        ws = self._prepared.websocket if self._prepared is not None else self.config.websocket
        port = ws.port
        if not port:
            port = manager.container.message_layer().port
        host = ws.address if ws.address not in ("", "0.0.0.0", "::") else "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        if ws.tls.enabled:
            ctx = ssl.create_default_context(cafile=ws.tls.certFile)
            ctx.check_hostname = False  # the simulated LC trusts the GM's own certificate
            return f"wss://{host}:{port}/", ctx
        return f"ws://{host}:{port}/", None

    # -- shutdown --------------------------------------------------------------------

    def request_stop(self) -> None:
        """Ask the stand-ins to stop (from a signal handler: no joins here)."""
        for lc in self.lcs:
            lc.request_stop()
        for kubelet in self.kubelets:
            kubelet.request_stop()

    def stop(self) -> None:
        """Stop the stand-ins, then the API server (which closes its SQLite store)."""
        for lc in self.lcs:
            lc.stop()
        for kubelet in self.kubelets:
            kubelet.stop()
        self.lcs, self.kubelets = [], []
        if self.deployments is not None:
            self.deployments.stop()
            self.deployments = None
        if self.kube is not None:
            with contextlib.suppress(Exception):
                self.kube.api_client.close()  # type: ignore[no-untyped-call]
            self.kube = None
        if self.server is not None:
            self.server.stop()
            self.server = None
        self._release()

    def _release(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(path, 0o600)


def _first_token(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    return next((t.strip() for t in text.splitlines() if t.strip()), None)


def _retry_waiting_syncs() -> None:
    moved = retry_all_waiting()
    logger.info("embedded: the store writes again; {} waiting sync(s) retried now", moved)
