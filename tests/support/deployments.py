"""The embedded Deployment controller against the session API server, for tests.

`deployment_controller` (a fixture factory imported by a directory's conftest) starts
one scoped to the test's namespace, so the Deployments of tests beside it are not its
business, and stops it at the end of the test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import kubernetes
import pytest

from sedna.embedded.deployments import DeploymentController
from sedna.runtime import Clock, KubeClient

DeploymentControllerFactory = Callable[..., DeploymentController]


@pytest.fixture()
def deployment_controller(
    api_client: kubernetes.client.ApiClient, namespace: str
) -> Iterator[DeploymentControllerFactory]:
    """``start(clock=None)``: a running stand-in for the test namespace (stopped after)."""
    started: list[DeploymentController] = []

    def start(clock: Clock | None = None, **kwargs: Any) -> DeploymentController:
        ctl = DeploymentController(
            KubeClient(api_client, pool_size=None), namespace=namespace, clock=clock, **kwargs
        )
        ctl.start()
        started.append(ctl)
        return ctl

    yield start
    for ctl in started:
        ctl.stop()
