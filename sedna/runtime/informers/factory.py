"""One shared informer per resource for the whole GM.

Every feature controller asks the factory for the informers it needs; asking
twice for the same resource (and namespace scope) returns the same informer, so
N controllers watching pods cost one list+watch, one cache and one dispatch
thread, as with client-go's ``SharedInformerFactory``.

A metadata-only informer of a resource (``informer(res, metadata_only=True)``,
client-go's ``metadatainformer``) is a separate informer with a cache of
``PartialObjectMetadata``: it coexists with the full informer of the same resource,
and is what a consumer that needs no spec or status should ask for (the message
layer watches Nodes only to see them deleted: a full Node is 10-50 KB).

Every informer gets a transform before caching (client-go's ``SetTransform``): unless
the caller names another, the factory's ``default_transform``, which drops
``managedFields`` and shares equal spec subtrees between objects (``SubtreeSharing``,
one table per factory). An informer is shared only with
callers that ask for the same transform: asking for a different one for the same
resource, namespace and selector is a ``ValueError``, as client-go refuses
``SetTransform`` on a started informer. Pods of Sedna's workers are best asked for with
``worker_pods``: one informer per feature kind, label-scoped (``<kind>.<group>/name``
exists), so the GM lists and watches none of the cluster's other pods, with
``worker_pod_transform`` (a constructor argument, so tests can record what is read);
the Deployments, Services and HPAs a feature kind makes with ``owned_by_kind``, scoped
by the same label.

The resync period is Sedna's: one random value in ``[min, 2*min)`` per factory
(its ``genResyncPeriod``), so that many GMs do not resync in lockstep.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any, Final

from loguru import logger

from ..clock import Clock, RealClock
from ..kube.client import DEFAULT_POOL_SIZE, KubeClient, ensure_pool_size
from ..kube.resources import PODS, Resource
from ..stop_request import StopFlag
from .informer import InformerOptions, SharedInformer
from .mutation import CacheMutationError, detector_enabled_by_env
from .store import Lister
from .transforms import SubtreeSharing, Transform, worker_pod_transform

__all__ = ["SharedInformerFactory", "worker_label_key"]


def worker_label_key(res: Resource) -> str:
    """The ``<kind lower>.<group>/name`` label key Sedna puts on the workers of ``res``."""
    return f"{res.kind}.{res.group}/name".lower()


def _default_transform(obj: dict[str, Any]) -> dict[str, Any]:
    """Marker for "the factory's default transform" (never called)."""
    raise AssertionError("the factory resolves this marker")


DEFAULT_TRANSFORM: Final[Transform] = _default_transform

_STOP_POLL: Final = 0.25  # how soon a stop ends a cache-sync wait

# (resource, namespace, label selector, metadata only)
_InformerKey = tuple[Resource, str, str | None, bool]


class SharedInformerFactory:
    """Creates, starts, syncs and stops the shared informers of one client."""

    def __init__(
        self,
        client: KubeClient,
        *,
        namespace: str = "",
        min_resync_period: float = 30.0,
        clock: Clock | None = None,
        options: InformerOptions | None = None,
        detect_mutations: bool | None = None,
        rng: random.Random | None = None,
        worker_pod_transform: Transform = worker_pod_transform,
    ) -> None:
        self.client = client
        self.worker_pod_transform = worker_pod_transform
        self.default_transform: Transform = SubtreeSharing()
        self.namespace = namespace
        self.clock: Clock = clock or RealClock()
        self.options = options or InformerOptions()
        rng = rng or random.Random()
        self.resync_period = (
            min_resync_period * (1.0 + rng.random()) if min_resync_period > 0 else 0.0
        )
        self.detect_mutations = (
            detector_enabled_by_env() if detect_mutations is None else detect_mutations
        )
        self._lock = threading.Lock()
        self._informers: dict[_InformerKey, SharedInformer] = {}
        self._started = False
        self._stopped = False

    def informer(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        metadata_only: bool = False,
        transform: Transform | None = DEFAULT_TRANSFORM,
    ) -> SharedInformer:
        """The shared informer for ``res``; created on first use.

        ``namespace`` overrides the factory's scope for this informer. An informer
        requested after ``start()`` is started at once (client-go needs a second
        ``Start`` call; forgetting it is a classic bug). ``metadata_only`` asks for
        the metadata-only informer of ``res``: its cache holds ``PartialObjectMetadata``
        objects (``metadata`` only), and it is shared apart from the full one.
        ``transform`` runs on every object before it is cached (None: none at all;
        not given: ``default_transform``).
        """
        chosen = self.default_transform if transform is DEFAULT_TRANSFORM else transform
        ns = self.namespace if namespace is None else namespace
        if not res.namespaced:
            ns = ""
        key: _InformerKey = (res, ns, label_selector or None, metadata_only)
        with self._lock:
            if self._stopped:
                raise RuntimeError("informer factory is stopped")
            inf = self._informers.get(key)
            if inf is not None and inf.transform is not chosen:
                raise ValueError(
                    f"informer {inf.name} (selector {label_selector!r}) exists with another"
                    " transform"
                )
            if inf is None:
                inf = SharedInformer(
                    self.client.resource(res),
                    namespace=ns,
                    resync_period=self.resync_period,
                    clock=self.clock,
                    options=self.options,
                    detect_mutations=self.detect_mutations,
                    label_selector=label_selector or None,
                    metadata_only=metadata_only,
                    transform=chosen,
                )
                self._informers[key] = inf
                if self._started:
                    self._size_pool(len(self._informers))
                    inf.start()
        return inf

    def worker_pods(self, res: Resource, *, namespace: str | None = None) -> SharedInformer:
        """The informer of the pods whose workers' owner kind is ``res``.

        Scoped by Sedna's worker label ``<kind lower>.<group>/name`` (present on every
        worker a feature makes: ``generate_labels``), so foreign pods are neither listed,
        watched nor cached; a pod whose labels change to match arrives as an add, one
        that stops matching leaves as a delete (the API's selector-filtered watch).
        Sedna's Go GM watches every pod of its namespace scope instead, and caches them
        whole: about 10 KB of memory per foreign pod here.
        """
        selector = worker_label_key(res)
        return self.informer(
            PODS,
            namespace=namespace,
            label_selector=selector,
            transform=self.worker_pod_transform,
        )

    def owned_by_kind(
        self, res: Resource, owner: Resource, *, namespace: str | None = None
    ) -> SharedInformer:
        """The informer of the ``res`` objects (Deployments, Services, HPAs) that the
        features of kind ``owner`` make, scoped as ``worker_pods`` is: by Sedna's label
        ``<owner kind lower>.<group>/name`` (every such object carries it:
        ``generate_labels``), with the default transform. Foreign objects of ``res``
        are neither listed, watched nor cached; a relabel into or out of the selector
        arrives as an add or a delete.
        """
        return self.informer(res, namespace=namespace, label_selector=worker_label_key(owner))

    @property
    def stopped(self) -> bool:
        """Whether ``stop()`` was called."""
        return self._stopped

    def lister(
        self, res: Resource, *, namespace: str | None = None, metadata_only: bool = False
    ) -> Lister:
        """Shorthand for ``informer(res).lister``."""
        return self.informer(res, namespace=namespace, metadata_only=metadata_only).lister

    @property
    def informers(self) -> list[SharedInformer]:
        """Every informer created so far."""
        with self._lock:
            return list(self._informers.values())

    def start(self) -> None:
        """Start every informer (and any created later).

        The threads of all informers are started first and their lists let go together:
        a thread that lists at once keeps the interpreter busy, so each later
        ``Thread.start`` (which waits for the new thread to run) waited for its turn, and
        with 40 informers the last ones (often those with the most to list) began their
        lists 0.1 s after the first.
        """
        with self._lock:
            if self._stopped:
                raise RuntimeError("informer factory is stopped")
            self._started = True
            informers = list(self._informers.values())
        self._size_pool(len(informers))
        go = threading.Event()
        try:
            for inf in informers:
                inf.start(after=go)
        finally:
            go.set()

    def _size_pool(self, watches: int) -> None:
        """Each informer's watch holds one pooled connection for as long as it runs; the
        pool keeps those plus the controllers' requests, or every request beyond it
        opens (and TLS-handshakes) a connection that is discarded after one use."""
        ensure_pool_size(self.client.api_client, watches + DEFAULT_POOL_SIZE)

    def wait_for_cache_sync(
        self, timeout: float | None = None, stop: StopFlag | None = None
    ) -> bool:
        """Block until every started informer has synced; False on timeout or `stop`.

        Like client-go's ``WaitForCacheSync(stopCh, ...)``: a stop asked for while the
        API server is slow or unreachable ends the wait at once instead of after
        `timeout`. Real time on purpose: this waits for the API server, not for a
        delay of ours.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        for inf in self.informers:
            if not inf.is_started:
                continue
            while True:
                if stop is not None and stop.is_set():
                    return False
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                step = remaining
                if stop is not None:
                    step = _STOP_POLL if remaining is None else min(remaining, _STOP_POLL)
                if inf.wait_for_sync(step):
                    break
                if remaining is not None and (step is None or remaining <= step):
                    logger.warning("informer {} did not sync within {}s", inf.name, timeout)
                    return False
        return True

    def check_mutations(self) -> None:
        """Run the mutation detector of every informer; raise ``CacheMutationError``."""
        problems: list[str] = []
        for inf in self.informers:
            inf.check_mutations()
            det = inf.mutation_detector
            if det is not None:
                problems.extend(det.failures)
        if problems:
            raise CacheMutationError("; ".join(problems))

    def stop(self, timeout: float | None = None) -> bool:
        """Stop every informer and join its threads; True if all ended in time.

        With the mutation detector on, a final check runs after the threads are
        joined and raises ``CacheMutationError`` naming each changed object.
        """
        with self._lock:
            self._stopped = True
            informers = list(self._informers.values())
        for inf in informers:
            inf.request_stop()
        ok = True
        for inf in informers:
            ok = inf.join(timeout) and ok
        if self.detect_mutations:
            self.check_mutations()
        return ok
