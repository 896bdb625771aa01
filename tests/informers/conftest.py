"""Fixtures for informer tests: a KubeClient and factories stopped after each test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import kubernetes
import pytest

from sedna.embedded.apiserver import APIServer
from sedna.runtime.informers import InformerOptions, SharedInformerFactory
from sedna.runtime.kube import KubeClient


@pytest.fixture()
def kube(api_client: kubernetes.client.ApiClient) -> KubeClient:
    return KubeClient(api_client)


@pytest.fixture()
def srv(embedded_apiserver: APIServer) -> Iterator[APIServer]:
    """The embedded server with faults and tuning restored after the test."""
    interval = embedded_apiserver.bookmark_frequency
    yield embedded_apiserver
    embedded_apiserver.faults.reset()
    embedded_apiserver.bookmark_frequency = interval


FAST = InformerOptions(inactivity_timeout=30.0, join_timeout=5.0)


@pytest.fixture()
def make_factory(kube: KubeClient) -> Iterator[Callable[..., SharedInformerFactory]]:
    """Build factories (short timeouts, no resync unless asked); all stopped at teardown."""
    made: list[SharedInformerFactory] = []

    def make(**kw: Any) -> SharedInformerFactory:
        kw.setdefault("min_resync_period", 0.0)
        kw.setdefault("options", FAST)
        f = SharedInformerFactory(kube, **kw)
        made.append(f)
        return f

    yield make
    for f in made:
        if not f.stopped:
            f.stop()
