"""``APIServer``: the assembled in-process API server, run in a thread of its own.

Tests and the GM talk to it only over HTTP, as they would to kube-apiserver; the
thread owns the asyncio loop, the store and every object in it.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import ipaddress
import os
import secrets
import ssl
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import yaml
from aiohttp import web
from loguru import logger

from sedna.runtime.log_safety import quiet_logger
from sedna.runtime.messaging.auth import token_valid
from sedna.runtime.tls_buffers import limit_tls_read_buffers

from .authorization import Authorizer, RestrictedTokens
from .bodies import BODY_DEADLINE, DEFAULT_BODY_TIMEOUT, MAX_BODY_BYTES, BodyDeadline
from .faults import FaultInjector, StoreWriteFault
from .gc import GarbageCollector
from .handlers import DEFAULT_BOOKMARK_FREQUENCY, Handlers
from .housekeeping import (
    DEFAULT_EVENT_TTL,
    DEFAULT_TERMINATED_POD_THRESHOLD,
    Housekeeper,
    SweepResult,
)
from .operations import Operations
from .persistence import SQLitePersister
from .requests import PROCESS_REQUESTS, RequestRecorder
from .resources import CRD_KEY, Registry
from .store import Store
from .tls import ServerCert, ensure_pki, utc_now
from .watch import DEFAULT_HISTORY_BYTES, WatchHub
from .watch_limits import DEFAULT_MAX_WATCHES, DEFAULT_MAX_WATCHES_PER_CLIENT, WatchLimits

T = TypeVar("T")
_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_yaml_cache: dict[tuple[str, float], list[Any]] = {}


def _load_yaml(path: Path) -> list[Any]:
    """Parse a (multi-document) YAML file with libyaml, cached: Sedna's CRDs are 11 MB
    and every test server installs them."""
    key = (str(path.resolve()), path.stat().st_mtime)
    docs = _yaml_cache.get(key)
    if docs is None:
        with path.open("rb") as fh:
            docs = list(yaml.load_all(fh, Loader=_YAML_LOADER))
        _yaml_cache[key] = docs
    return docs


# How often a serving server checks whether its certificates are due for renewal: an
# hourly wake-up costs nothing idle, and renewal starts 30 days before expiry.
DEFAULT_CERT_CHECK_INTERVAL = 3600.0
HTTP_ERRORS_LOG = quiet_logger("aiohttp.sedna-gm", "embedded apiserver")

# How long a connection may stay silent: before its first request's headers are
# complete, and between requests. Watches stream, so they are not idle.
DEFAULT_IDLE_TIMEOUT = 30.0


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class APIServer:
    """A kube-apiserver look-alike for the official client and kubectl.

    Every request but the public probes must carry `Authorization: Bearer <token>` with
    one of `tokens` (one is generated when none is given); the first is `token`, the
    one `write_kubeconfig` writes. `token_source` may add more at any time: it is
    called per request (e.g. `sedna.runtime.messaging.file_token_provider`).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        db_path: str | Path | None = None,
        history: int = 1000,
        history_bytes: int = DEFAULT_HISTORY_BYTES,
        pod_logs: Path | None = None,
        schema_validation: bool = True,
        tokens: Iterable[str] | None = None,
        token_source: Callable[[], Iterable[str]] | None = None,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        body_timeout: float = DEFAULT_BODY_TIMEOUT,
        pki_dir: Path | None = None,
        event_ttl: float = DEFAULT_EVENT_TTL,
        terminated_pod_threshold: int = DEFAULT_TERMINATED_POD_THRESHOLD,
        housekeeping_interval: float | None = None,
        clock: Callable[[], datetime] | None = None,
        bookmark_frequency: float = DEFAULT_BOOKMARK_FREQUENCY,
        cert_check_interval: float = DEFAULT_CERT_CHECK_INTERVAL,
        cert_clock: Callable[[], datetime] | None = None,
        max_watches: int = DEFAULT_MAX_WATCHES,
        max_watches_per_client: int = DEFAULT_MAX_WATCHES_PER_CLIENT,
    ) -> None:
        self.host = host
        if not is_loopback(host):
            logger.warning(
                "embedded apiserver listens on {}, not a loopback address: anyone who can "
                "reach it and holds its token can read every Secret",
                host,
            )
        # the certificate's directory (a private temporary one when not given)
        self._own_pki: tempfile.TemporaryDirectory[str] | None = None
        if pki_dir is None:
            self._own_pki = tempfile.TemporaryDirectory(prefix="sedna-apiserver-pki-")
            pki_dir = Path(self._own_pki.name)
        # CA and serving certificate, kept there across restarts and renewed when due
        # (tls.py) by `cert_clock`; checked every `cert_check_interval` seconds while serving
        self._pki_dir = Path(pki_dir)
        self._cert_clock = cert_clock or utc_now
        self.cert: ServerCert = ensure_pki(self._pki_dir, host, self._cert_clock)[0]
        self.cert_check_interval = cert_check_interval
        self._ssl: ssl.SSLContext | None = None
        self._cert_timer: asyncio.TimerHandle | None = None
        self._ca_listeners: list[Callable[[ServerCert], None]] = []
        given = [t for t in (tokens or ()) if t]
        self.token = given[0] if given else secrets.token_urlsafe(32)
        self._tokens = frozenset([self.token, *given])
        self._token_source = token_source
        # tokens of principals with RBAC, not cluster-admin (`issue_token`)
        self.restricted = RestrictedTokens()
        self.idle_timeout = idle_timeout
        # a request body must arrive within body_timeout in all (408 and closed, counted)
        self.body_deadline = BodyDeadline(body_timeout)
        # where the kubelet's container logs are (`sedna.embedded.pod_logs`); None: no kubelet
        self.pod_logs = pod_logs
        self._port = port
        self.faults = FaultInjector()
        # every distinct call by user agent (the RBAC tests compare the GM's with its RBAC)
        self.requests = RequestRecorder(also=PROCESS_REQUESTS)
        self.registry = Registry()
        self.hub = WatchHub(history, history_bytes)
        # open watches in all and per client (429 over them), each one's queue bound
        self.watch_limits = WatchLimits(max_watches, max_watches_per_client)
        self.persister = SQLitePersister(db_path) if db_path is not None else None
        self.store = Store(self.hub, self.persister)
        # a full disk, simulated below the API (tests): `store_faults.fail_writes()`
        self.store_faults = StoreWriteFault()
        if self.persister is not None:
            self.persister.fault = self.store_faults
        # custom resources checked against their CRD's schema (schema_validation.py)
        self.ops = Operations(self.store, self.registry, schema_validation=schema_validation)
        self.gc = GarbageCollector(self.ops)
        # Event TTL, terminated and orphaned pod GC, stale logs (housekeeping.py): every
        # `housekeeping_interval` seconds on the loop when set, else by `sweep()` only
        self.housekeeper = Housekeeper(
            self.ops,
            event_ttl=event_ttl,
            terminated_pod_threshold=terminated_pod_threshold,
            log_dir=pod_logs,
            clock=clock,
        )
        self.housekeeping_interval = housekeeping_interval
        self._sweep_timer: asyncio.TimerHandle | None = None
        # watch tuning: BOOKMARKs (when asked for) every `bookmark_frequency` seconds and
        # 2 s before a watch's deadline, as kube's cacher; tests may lower it
        self.bookmark_frequency = bookmark_frequency
        self.watch_timeout = 1800.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._restore()
        self.ops.bootstrap()

    def _restore(self) -> None:
        if self.persister is None:
            return
        rv = self.persister.rv()
        for key, obj, size in self.persister.load():
            if key == CRD_KEY:
                self.registry.add_crd(obj)
            self.store.load(key, obj, size)
        self.store.rv = max(self.store.rv, rv)
        self.hub.compacted_rv = self.store.rv

    def authenticated(self, authorization: str | None) -> bool:
        """True when the header carries one of the valid bearer tokens."""
        if not authorization:
            return False
        scheme, _, candidate = authorization.strip().partition(" ")
        if scheme.lower() != "bearer":
            return False
        tokens: Iterable[str] = self._tokens | self.restricted.tokens()
        if self._token_source is not None:
            try:
                tokens = frozenset(tokens) | frozenset(self._token_source())
            except Exception as exc:
                logger.error("embedded apiserver: token source failed ({})", type(exc).__name__)
        return token_valid(candidate.strip(), tokens)

    def issue_token(self, user: str, authorizer: Authorizer) -> str:
        """A bearer token for `user` whose resource requests `authorizer` must allow.

        A refused request is kube's 403 Forbidden naming the user, verb and resource,
        so a client that lacks a grant fails here as it would on a cluster.
        """
        return self.restricted.issue(user, authorizer)

    def revoke_token(self, token: str) -> None:
        self.restricted.revoke(token)

    # ---- lifecycle -----------------------------------------------------------------
    @property
    def port(self) -> int:
        """The bound port (known after ``start`` when created with port 0)."""
        return self._port

    @property
    def url(self) -> str:
        """Base URL for clients."""
        return f"https://{self.host}:{self._port}"

    def start(self) -> None:
        """Serve in a daemon thread; returns once the socket listens."""
        ready = threading.Event()
        errors: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._serve())
            except BaseException as exc:  # report bind errors to start()
                errors.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._shutdown())
            loop.close()

        self._thread = threading.Thread(target=run, name="embedded-apiserver", daemon=True)
        self._thread.start()
        ready.wait()
        if errors:
            raise errors[0]

    async def _serve(self) -> None:
        limit_tls_read_buffers()  # else 256 KiB per connection: idle watches add up
        app = web.Application(
            client_max_size=MAX_BODY_BYTES,
            handler_args={
                "max_field_size": 65536,
                "keepalive_timeout": self.idle_timeout,
                # a request aiohttp cannot parse: one counted line, no traceback
                "logger": HTTP_ERRORS_LOG,
            },
        )
        app[BODY_DEADLINE] = self.body_deadline
        app.router.add_route("*", "/{tail:.*}", Handlers(self).handle)
        # A client that hangs up cancels its request, as kube's request context does:
        # an idle watch would otherwise hold its slot (watch_limits) until its timeout.
        self._runner = web.AppRunner(
            app,
            access_log=None,
            handle_signals=False,
            shutdown_timeout=0.5,
            handler_cancellation=True,
        )
        await self._runner.setup()
        site = web.TCPSite(
            self._runner,
            self.host,
            self._port,
            backlog=1024,
            reuse_address=True,
            ssl_context=self._serving_context(),
        )
        await site.start()
        server = site._server
        assert server is not None
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            self._port = sockets[0].getsockname()[1]
        if self.housekeeping_interval:
            self._schedule_sweep(self.housekeeping_interval)
        self._schedule_cert_check()
        self.store.health.attach(asyncio.get_running_loop(), self.store.probe)

    # ---- certificates --------------------------------------------------------------
    def _serving_context(self) -> ssl.SSLContext:
        self._ssl = self.cert.context()
        return self._ssl

    def on_ca_renewed(self, callback: Callable[[ServerCert], None]) -> None:
        """Call `callback` (on the server's thread) after the CA certificate changed, so
        whoever hands it out (a kubeconfig) can rewrite it."""
        self._ca_listeners.append(callback)

    def check_certificates(self) -> bool:
        """Renew what is due (see `tls.ensure_pki`) and serve it from the next handshake
        on, without a restart. True when anything was renewed."""
        return self._call(self._check_certificates)

    def _check_certificates(self) -> bool:
        issued, ca_changed = ensure_pki(self._pki_dir, self.host, self._cert_clock)
        if issued == self.cert and not ca_changed:
            return False
        self.cert = issued
        if self._ssl is not None:
            # new handshakes take the new chain; open connections keep theirs
            self._ssl.load_cert_chain(issued.cert_file, issued.key_file)
        logger.info(
            "embedded apiserver: certificate renewed, valid until {}{}",
            issued.not_after.isoformat(),
            " (new CA certificate, same key)" if ca_changed else "",
        )
        if ca_changed:
            for callback in self._ca_listeners:
                try:
                    callback(issued)
                except Exception as exc:  # one failing holder must not stop the others
                    logger.error("embedded apiserver: CA renewal hook failed: {}", exc)
        return True

    def _schedule_cert_check(self) -> None:
        loop = self._loop
        if loop is not None and self.cert_check_interval > 0:
            self._cert_timer = loop.call_later(self.cert_check_interval, self._periodic_cert_check)

    def _periodic_cert_check(self) -> None:
        self._cert_timer = None
        try:
            self._check_certificates()
        except Exception as exc:  # a failed renewal is retried at the next check
            logger.exception("embedded apiserver: certificate renewal failed: {}", exc)
        self._schedule_cert_check()

    # ---- housekeeping --------------------------------------------------------------
    def sweep(self, now: datetime | None = None) -> SweepResult:
        """Run every housekeeping sweep once, at `now` (the server's clock when None)."""
        return self._call(lambda: self.housekeeper.sweep(now))

    def _schedule_sweep(self, delay: float) -> None:
        loop = self._loop
        if loop is not None:
            self._sweep_timer = loop.call_later(delay, self._periodic_sweep)

    def _periodic_sweep(self) -> None:
        self._sweep_timer = None
        interval = self.housekeeping_interval or 0.0
        more = False
        try:
            done = self.housekeeper.sweep()
            more = done.more
            if done.events or done.terminated_pods or done.orphaned_pods or done.logs:
                logger.info(
                    "embedded apiserver: housekeeping removed {} expired Event(s), {} "
                    "terminated pod(s), {} orphaned pod(s), {} stale log file(s)",
                    done.events, done.terminated_pods, done.orphaned_pods, done.logs,
                )  # fmt: skip
        except Exception as exc:  # a sweep that fails must not stop the next ones
            logger.exception("embedded apiserver: housekeeping failed: {}", exc)
        if interval > 0:
            self._schedule_sweep(min(interval, 1.0) if more else interval)

    @property
    def store_error(self) -> str | None:
        """Why the store cannot write now (a full disk), None while it can (any thread)."""
        return self.store.health.error

    async def _shutdown(self) -> None:
        if self._cert_timer is not None:
            self._cert_timer.cancel()
            self._cert_timer = None
        self.store.health.detach()
        if self._sweep_timer is not None:
            self._sweep_timer.cancel()
            self._sweep_timer = None
        self.hub.close_all()
        if self._runner is not None:
            await self._runner.cleanup()

    def stop(self) -> None:
        """Close watches and the socket; safe to call twice."""
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None and thread.is_alive():
            loop.call_soon_threadsafe(self.hub.close_all)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=10)
        self._loop = None
        self._thread = None
        if self.persister is not None:
            self.persister.close()
            self.persister = None
            self.store.persister = None
        if self._own_pki is not None:
            self._own_pki.cleanup()
            self._own_pki = None

    def __enter__(self) -> APIServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the loop thread when serving (the store is single-threaded)."""
        loop = self._loop
        if loop is None or not loop.is_running() or threading.current_thread() is self._thread:
            return fn()

        async def wrapper() -> T:
            return fn()

        return asyncio.run_coroutine_threadsafe(wrapper(), loop).result()

    # ---- CRDs ----------------------------------------------------------------------
    def install_crd(self, manifest: Mapping[str, Any]) -> None:
        """Create (or replace the spec of) a CRD, as ``kubectl apply`` of it would."""
        body = copy.deepcopy(dict(manifest))
        rt = self.registry.get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        assert rt is not None
        name = str(body.get("metadata", {}).get("name", ""))

        def do() -> None:
            old = self.store.get(CRD_KEY, "", name)
            if old is None:
                self.ops.create(rt, None, body)
            else:
                new = copy.deepcopy(old)
                new["spec"] = body.get("spec", {})
                self.ops.commit_update(rt, old, new, None, internal=True)

        self._call(do)

    def install_crds_from_dir(self, path: Path) -> None:
        """Install every CRD of every ``*.yaml`` file (multi-document files included)."""
        for f in sorted(Path(path).glob("*.yaml")):
            for doc in _load_yaml(f):
                if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                    self.install_crd(doc)

    def write_kubeconfig(self, path: Path) -> None:
        """A kubeconfig (cluster, user, context) for kubectl and the python client."""
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "embedded",
                    "cluster": {
                        "server": self.url,
                        "certificate-authority-data": base64.b64encode(self.cert.ca_pem).decode(),
                    },
                }
            ],
            "users": [{"name": "embedded", "user": {"token": self.token}}],
            "contexts": [
                {
                    "name": "embedded",
                    "context": {"cluster": "embedded", "user": "embedded", "namespace": "default"},
                }
            ],
            "current-context": "embedded",
            "preferences": {},
        }
        # It holds the token: readable by its owner only, from the first byte.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(yaml.safe_dump(cfg, sort_keys=False))
        os.chmod(path, 0o600)

    def client_configuration(self) -> Any:
        """A `kubernetes.client.Configuration` for this server, with its token."""
        import kubernetes

        cfg = kubernetes.client.Configuration()
        cfg.host = self.url
        cfg.ssl_ca_cert = str(self.cert.ca_file)
        cfg.api_key = {"authorization": self.token}
        cfg.api_key_prefix = {"authorization": "Bearer"}
        return cfg

    @property
    def configuration(self) -> Any:
        """A fresh client configuration (as `client_configuration`), like a remote cluster's."""
        return self.client_configuration()
