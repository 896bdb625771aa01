"""The fixtures of the feature test directories, shared: GMs always stopped, test LCs, logs.

A directory opts in by importing them into its ``conftest.py`` and defining a
``harness`` fixture naming its GM, LC and Api classes (``harness_fixture`` makes one).
They are imported rather than registered through ``pytest_plugins`` in
``tests/conftest.py`` so that they (above all the autouse mutation detector) apply only
to the directories that ask for them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import kubernetes
import pytest

from sedna.embedded.apiserver import APIServer

from .api import ApiBase
from .gm import GMHarness
from .lc import LCBase
from .logs import LogCapture, capture_logs


@dataclass(frozen=True)
class Harness:
    """A test directory's classes for the shared fixtures."""

    gm: Callable[..., GMHarness]  # (api_client_factory, namespace, **options)
    lc: type[LCBase]
    api: type[ApiBase]


def harness_fixture(
    gm: Callable[..., GMHarness], lc: type[LCBase], api: type[ApiBase]
) -> Callable[[], Harness]:
    """A ``harness`` fixture for a directory's conftest: ``harness = harness_fixture(...)``."""

    @pytest.fixture()
    def harness() -> Harness:
        return Harness(gm=gm, lc=lc, api=api)

    return harness


@pytest.fixture(autouse=True)
def _mutation_detector(monkeypatch: pytest.MonkeyPatch) -> None:
    # The informers then fail loudly if the controller changes a cached object.
    monkeypatch.setenv("SEDNA_CACHE_MUTATION_DETECTOR", "1")


@pytest.fixture()
def api(harness: Harness, api_client: kubernetes.client.ApiClient, namespace: str) -> ApiBase:
    return harness.api(api_client, namespace)


@pytest.fixture()
def make_gm(harness: Harness, apiserver: Any, namespace: str) -> Iterator[Callable[..., GMHarness]]:
    gms: list[GMHarness] = []

    def client() -> kubernetes.client.ApiClient:
        cfg = getattr(apiserver, "configuration", None)
        if cfg is None:
            cfg = apiserver.client_configuration()
        return kubernetes.client.ApiClient(cfg)

    def build(**kwargs: Any) -> GMHarness:
        gm = harness.gm(client, namespace, **kwargs)
        if isinstance(apiserver, APIServer):  # the GM may do only what its features declare
            gm.apiserver = apiserver
        gms.append(gm)
        return gm.start()

    yield build
    for gm in gms:
        gm.stop()


@pytest.fixture()
def make_lc(harness: Harness) -> Iterator[Callable[[GMHarness, str], LCBase]]:
    lcs: list[LCBase] = []

    def connect(gm: GMHarness, node: str) -> LCBase:
        lc = harness.lc(gm.port, node)
        lcs.append(lc)
        return lc

    yield connect
    for lc in lcs:
        lc.close()


@pytest.fixture()
def logs() -> Iterator[LogCapture]:
    yield from capture_logs()
