"""Shared fixtures: the reference data, an API server and a client for it.

By default the tests run against the in-process API server. With
``SEDNA_TEST_KUBECONFIG`` naming a kubeconfig they run against that cluster instead
(its Sedna CRDs must be installed); tests of server internals then skip themselves
through the ``embedded_apiserver`` fixture.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from support.outside import (
    CRDS_DIR,
    PROJECT_ROOT,
    SAMPLES_DIR,
    OutsideReadGuard,
    reference_dir,
    reference_missing,
)

from sedna.embedded.apiserver import APIServer

REAL_KUBECONFIG = os.environ.get("SEDNA_TEST_KUBECONFIG")


@pytest.fixture(scope="session")
def sedna_reference() -> Path:
    """Sedna's own CRDs and samples, as Sedna ships them (``support.outside``): only for
    tests whose point is compatibility with those files; they skip without them."""
    missing = reference_missing()
    if missing:
        pytest.skip(missing)
    return reference_dir()


@pytest.fixture(scope="session")
def sample_dir() -> Path:
    """The project's own sample objects of each Sedna kind (``tests/fixtures/samples``)."""
    return SAMPLES_DIR


class _RemoteCluster:
    """Stands in for ``APIServer`` when the tests target a real cluster."""

    def __init__(self, kubeconfig: str) -> None:
        cfg = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
        self.configuration = cfg
        self.url = cfg.host
        self.server = None
        self.kubeconfig = kubeconfig

    def client_configuration(self) -> kubernetes.client.Configuration:
        return self.configuration


@pytest.fixture(scope="session")
def apiserver() -> Iterator[Any]:
    """A running API server with Sedna's CRDs installed (or the real cluster)."""
    if REAL_KUBECONFIG:
        yield _RemoteCluster(REAL_KUBECONFIG)
        return
    # Without schema validation: the suite builds minimal objects to test the server's and
    # the controllers' internals (and feature-level checks of malformed jobs); validation
    # has tests of its own (tests/cluster), and the embedded mode runs with it.
    srv = APIServer("127.0.0.1", 0, schema_validation=False)
    srv.start()
    srv.install_crds_from_dir(CRDS_DIR)
    srv.server = srv  # type: ignore[attr-defined]  # tests read `.server`
    try:
        yield srv
        _check_gm_rbac()
    finally:
        srv.stop()


def _check_gm_rbac() -> None:
    """Fail the session when the GM made a call config/rbac.yaml does not grant (a 403 on
    a real cluster); see `support.rbac`."""
    from support.rbac import RBAC_PATH, denied_gm_calls, describe

    from sedna.embedded.apiserver import PROCESS_REQUESTS

    # every in-process server of the session: this one and those tests ran themselves
    _dump_gm_calls(PROCESS_REQUESTS)
    denied = denied_gm_calls(PROCESS_REQUESTS)
    if denied:
        calls = describe(denied).replace("\n", "\n  ")
        pytest.fail(f"the GM made calls {RBAC_PATH.name} does not grant:\n  {calls}")


def _dump_gm_calls(srv: Any) -> None:
    """Leave this process's GM calls for the check of unused grants (`pytest_sessionfinish`)."""
    from support.rbac import CALLS_DIR_ENV, dump_calls, gm_calls

    folder = os.environ.get(CALLS_DIR_ENV)
    if folder:
        dump_calls(gm_calls(srv), Path(folder), os.environ.get("PYTEST_XDIST_WORKER", "main"))


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(OutsideReadGuard(), "outside-read-guard")
    if hasattr(config, "workerinput"):
        return  # an xdist worker: the controller set the folder up
    import tempfile

    from support.rbac import CALLS_DIR_ENV

    os.environ[CALLS_DIR_ENV] = tempfile.mkdtemp(prefix="sedna-gm-rbac-calls-")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that takes the ``sedna_reference`` fixture is a reference test: marked so
    that ``-m "not sedna_reference"`` leaves it out and the outside-read guard allows it."""
    for item in items:
        if "sedna_reference" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.sedna_reference)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """After a whole, green run: fail on any verb config/rbac.yaml grants that no GM call
    of the suite used (least privilege both ways; see `support.rbac`)."""
    import shutil

    from support.rbac import CALLS_DIR_ENV, RBAC_PATH, load_calls, unused_grants

    if hasattr(session.config, "workerinput"):
        return
    folder = os.environ.get(CALLS_DIR_ENV)
    if not folder:
        return
    try:
        whole = _ran_whole_suite(session) and exitstatus == 0 and not REAL_KUBECONFIG
        calls = load_calls(Path(folder))
        if whole and calls:
            unused = unused_grants(calls)
            if unused:
                lines = "\n  ".join(f"{v} {g or 'core'}/{r}" for g, r, v in unused)
                session.config.get_terminal_writer().line(
                    f"{RBAC_PATH.name} grants what no GM call of the suite used:\n  {lines}",
                    red=True,
                )
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            else:
                session.config.get_terminal_writer().line(
                    f"\n{RBAC_PATH.name}: every granted verb was used by a GM call of the suite"
                )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _ran_whole_suite(session: pytest.Session) -> bool:
    cfg = session.config
    if cfg.getoption("keyword", "") or cfg.getoption("markexpr", ""):
        return False
    if session.testscollected == 0 or getattr(cfg.option, "deselect", None):
        return False
    args = [Path(a.split("::")[0]).resolve() for a in cfg.args] or [PROJECT_ROOT]
    return all(a in (PROJECT_ROOT, PROJECT_ROOT / "tests") for a in args)


@pytest.fixture(scope="session")
def api_calls(apiserver: Any) -> Any:
    """The session server's `RequestRecorder` (every distinct call, by user agent)."""
    if not isinstance(apiserver, APIServer):
        pytest.skip("the request recorder is the in-process server's")
    return apiserver.requests


@pytest.fixture()
def embedded_apiserver(apiserver: Any) -> APIServer:
    """The in-process server itself, for tests of its internals (faults, restarts)."""
    if not isinstance(apiserver, APIServer):
        pytest.skip("server-internal test: not applicable to a real cluster")
    apiserver.faults.reset()
    return apiserver


def make_configuration(apiserver: Any) -> kubernetes.client.Configuration:
    """A client configuration for the fixture's server."""
    if isinstance(apiserver, _RemoteCluster):
        return apiserver.configuration
    cfg = apiserver.client_configuration()
    return cfg


@pytest.fixture(scope="session")
def api_client(apiserver: Any) -> Iterator[kubernetes.client.ApiClient]:
    """An official ``kubernetes`` client for the server."""
    client = kubernetes.client.ApiClient(make_configuration(apiserver))
    token = getattr(apiserver, "token", None)
    if token:  # raw requests (param_serialize without auth_settings) authenticate too
        client.set_default_header("Authorization", f"Bearer {token}")
    try:
        yield client
    finally:
        client.close()


@pytest.fixture()
def namespace(api_client: kubernetes.client.ApiClient) -> Iterator[str]:
    """A fresh namespace, so tests sharing the server do not see each other's objects."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    core = kubernetes.client.CoreV1Api(api_client)
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    if REAL_KUBECONFIG:
        with contextlib.suppress(kubernetes.client.ApiException):
            core.delete_namespace(name)
