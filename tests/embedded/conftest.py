"""The embedded tests' fixtures: the Deployment stand-in runner from `support`."""

from __future__ import annotations

from support.deployments import deployment_controller as deployment_controller
