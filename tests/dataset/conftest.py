"""Fixtures: the test namespace's API view, GMs that are always stopped, test LCs, logs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import kubernetes
import pytest

from .helpers import GM, Api, LogCapture, TestLC, capture_logs

GMFactory = Callable[..., GM]
LCFactory = Callable[[GM, str], TestLC]


@pytest.fixture(autouse=True)
def _mutation_detector(monkeypatch: pytest.MonkeyPatch) -> None:
    # The informers then fail loudly if the controller changes a cached object.
    monkeypatch.setenv("SEDNA_CACHE_MUTATION_DETECTOR", "1")


@pytest.fixture()
def api(api_client: kubernetes.client.ApiClient, namespace: str) -> Api:
    return Api(api_client, namespace)


@pytest.fixture()
def make_gm(apiserver: Any, namespace: str) -> Iterator[GMFactory]:
    gms: list[GM] = []

    def client() -> kubernetes.client.ApiClient:
        cfg = getattr(apiserver, "configuration", None)
        if cfg is None:
            cfg = kubernetes.client.Configuration()
            cfg.host = apiserver.url
        return kubernetes.client.ApiClient(cfg)

    def build(**kwargs: Any) -> GM:
        gm = GM(client, namespace, **kwargs)
        gms.append(gm)
        return gm.start()

    yield build
    for gm in gms:
        gm.stop()


@pytest.fixture()
def make_lc() -> Iterator[LCFactory]:
    lcs: list[TestLC] = []

    def connect(gm: GM, node: str) -> TestLC:
        lc = TestLC(gm.port, node)
        lcs.append(lc)
        return lc

    yield connect
    for lc in lcs:
        lc.close()


@pytest.fixture()
def logs() -> Iterator[LogCapture]:
    yield from capture_logs()
