"""``APIServer``: the assembled in-process API server, run in a thread of its own.

Tests and the GM talk to it only over HTTP, as they would to kube-apiserver; the
thread owns the asyncio loop, the store and every object in it.
"""

from __future__ import annotations

import asyncio
import copy
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from aiohttp import web

from .faults import FaultInjector
from .gc import GarbageCollector
from .handlers import Handlers
from .operations import Operations
from .persistence import SQLitePersister
from .requests import PROCESS_REQUESTS, RequestRecorder
from .resources import CRD_KEY, Registry
from .store import Store
from .watch import WatchHub

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


class APIServer:
    """A kube-apiserver look-alike for the official client and kubectl."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        db_path: str | Path | None = None,
        history: int = 1000,
        pod_logs: Path | None = None,
    ) -> None:
        self.host = host
        # where the kubelet's container logs are (`sedna.embedded.pod_logs`); None: no kubelet
        self.pod_logs = pod_logs
        self._port = port
        self.faults = FaultInjector()
        # every distinct call by user agent (the RBAC tests compare the GM's with its RBAC)
        self.requests = RequestRecorder(also=PROCESS_REQUESTS)
        self.registry = Registry()
        self.hub = WatchHub(history)
        self.persister = SQLitePersister(db_path) if db_path is not None else None
        self.store = Store(self.hub, self.persister)
        self.ops = Operations(self.store, self.registry)
        self.gc = GarbageCollector(self.ops)
        # watch tuning; tests may lower these
        self.bookmark_interval = 1.0
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
        for key, obj in self.persister.load():
            if key == CRD_KEY:
                self.registry.add_crd(obj)
            self.store.load(key, obj)
        self.store.rv = max(self.store.rv, rv)
        self.hub.compacted_rv = self.store.rv

    # ---- lifecycle -----------------------------------------------------------------
    @property
    def port(self) -> int:
        """The bound port (known after ``start`` when created with port 0)."""
        return self._port

    @property
    def url(self) -> str:
        """Base URL for clients."""
        return f"http://{self.host}:{self._port}"

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
        app = web.Application(
            client_max_size=64 * 1024 * 1024, handler_args={"max_field_size": 65536}
        )
        app.router.add_route("*", "/{tail:.*}", Handlers(self).handle)
        self._runner = web.AppRunner(
            app, access_log=None, handle_signals=False, shutdown_timeout=0.5
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self._port, backlog=1024, reuse_address=True)
        await site.start()
        server = site._server
        assert server is not None
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            self._port = sockets[0].getsockname()[1]

    async def _shutdown(self) -> None:
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
            "clusters": [{"name": "embedded", "cluster": {"server": self.url}}],
            "users": [{"name": "embedded", "user": {"token": "embedded"}}],
            "contexts": [
                {
                    "name": "embedded",
                    "context": {"cluster": "embedded", "user": "embedded", "namespace": "default"},
                }
            ],
            "current-context": "embedded",
            "preferences": {},
        }
        Path(path).write_text(yaml.safe_dump(cfg, sort_keys=False))
