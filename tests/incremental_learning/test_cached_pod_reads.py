"""The worker pod transform never drops a field the controller reads.

The pod cache holds transformed pods (`worker_pod_transform`: no containers, volumes,
managedFields). Here the cache holds recording dicts instead: the transformed pod,
each node remembering the full pod's node at the same path. Every read of a key that
the full pod has and the transformed one lacks is recorded; two whole cycles of
Sedna's sample job must record none, while reads do reach the cached pods.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dependency_injector import providers
from support.waiting import wait_until

from sedna.runtime import RuntimeContainer, SharedInformerFactory, hookimpl
from sedna.runtime.informers import worker_pod_transform

from .conftest import GMFactory, LCFactory
from .helpers import GM, Api, env_of, start_sample_job
from .test_cycles import DS_NODE, WORKER_NODE, _deploy_stage, _eval_stage, _train_stage


class Reads:
    """What the controller read of cached pods (shared by every recording node)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: set[str] = set()
        self.dropped: set[str] = set()

    def note(self, path: str, key: Any, node: dict[str, Any], full: Any) -> None:
        where = f"{path}.{key}" if path else str(key)
        with self.lock:
            self.seen.add(where)
            if not dict.__contains__(node, key) and isinstance(full, dict) and key in full:
                self.dropped.add(where)


class Recording(dict[str, Any]):
    """A dict that reports each key read (get, [], in, iteration) to `Reads`."""

    def __init__(self, node: dict[str, Any], full: Any, path: str, reads: Reads) -> None:
        super().__init__(node)
        self._full, self._path, self._reads = full, path, reads

    def __getitem__(self, key: str) -> Any:
        self._reads.note(self._path, key, self, self._full)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        self._reads.note(self._path, key, self, self._full)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self._reads.note(self._path, key, self, self._full)
        return super().__contains__(key)

    def __iter__(self) -> Iterator[str]:
        self._iterated()
        return super().__iter__()

    def items(self) -> Any:
        self._iterated()
        return super().items()

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        # copies (the mutation detector's, a controller's) are plain and record nothing
        return {k: copy.deepcopy(dict.__getitem__(self, k), memo) for k in dict.keys(self)}

    def _iterated(self) -> None:
        if isinstance(self._full, dict):
            for key in self._full:
                self._reads.note(self._path, key, self, self._full)


def wrap(node: Any, full: Any, path: str, reads: Reads) -> Any:
    if isinstance(node, dict):
        sub = full if isinstance(full, dict) else {}
        return Recording(
            {k: wrap(v, sub.get(k), f"{path}.{k}" if path else k, reads) for k, v in node.items()},
            full,
            path,
            reads,
        )
    if isinstance(node, list):
        subs = full if isinstance(full, list) else []
        return [
            wrap(v, subs[i] if i < len(subs) else None, f"{path}[]", reads)
            for i, v in enumerate(node)
        ]
    return node


class _RecordingPlugin:
    """Builds the informer factory with a recording worker pod transform."""

    def __init__(self, gm: GM, reads: Reads) -> None:
        self.gm, self.reads = gm, reads

    @hookimpl
    def sedna_configure_container(self, container: RuntimeContainer) -> None:
        reads = self.reads

        def recording(obj: dict[str, Any]) -> dict[str, Any]:
            full = copy.deepcopy(obj)
            return wrap(worker_pod_transform(obj), full, "", reads)  # type: ignore[no-any-return]

        container.informers.override(
            providers.Singleton(
                SharedInformerFactory,
                container.kube,
                namespace=self.gm.config.namespace,
                min_resync_period=self.gm.config.minResyncPeriodSeconds,
                clock=container.clock,
                worker_pod_transform=recording,
                # its copies of recording dicts differ in type; other tests run it
                detect_mutations=False,
            )
        )


class RecordingGM(GM):
    reads = Reads()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.plugins["cached-pod-reads"] = _RecordingPlugin(self, self.reads)


def test_two_cycles_read_no_field_the_worker_pod_transform_drops(
    api: Api, make_lc: LCFactory, make_gm: GMFactory, sample_dir: Path, apiserver: Any
) -> None:
    import kubernetes

    def client() -> kubernetes.client.ApiClient:
        cfg = getattr(apiserver, "configuration", None)
        if cfg is None:
            cfg = kubernetes.client.Configuration()
            cfg.host = apiserver.url
        return kubernetes.client.ApiClient(cfg)

    RecordingGM.reads = Reads()
    gm = RecordingGM(client, api.ns).start()
    try:
        ds_lc = make_lc(gm, DS_NODE)
        node_lc = make_lc(gm, WORKER_NODE)
        start_sample_job(api, sample_dir)
        (infer,) = api.live_pods("inference")
        assert env_of(infer)  # the API's pod is whole; only the cache is trimmed
        name = infer["metadata"]["name"]
        # the API has the pod; the GM's watch brings it to the cache a moment later
        cached = wait_until(lambda: gm.controller.pods.lister.get(api.ns, name), what="cached pod")
        assert isinstance(cached, Recording) and "containers" not in dict(cached["spec"])
        api.set_phase(infer["metadata"]["name"], "Running")
        for cycle in (1, 2):
            _train_stage(api, ds_lc, node_lc, cycle)
            _eval_stage(api, ds_lc, node_lc, cycle)
            _deploy_stage(api, ds_lc, node_lc, False)
    finally:
        gm.stop()
    reads = RecordingGM.reads
    # the recording works: the controller read labels, owners and phases of cached pods
    assert {"metadata.labels", "metadata.ownerReferences", "status.phase"} <= reads.seen
    assert reads.dropped == set()
