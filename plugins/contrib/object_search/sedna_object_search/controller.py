"""The ObjectSearchService controller: the workload family with bare tracking pods.

Sedna parity: the objects of `workers`, ``active`` (active tracking pods plus active
Deployments), ``failed``, ``startTime`` and the conditions ``Running``/``Failed``; a
failed worker makes the service terminally ``Failed``. Sedna accepts no LC report for
this kind (its handler is a stub), and neither do we: none is registered, so the
message layer rejects such reports with a log line naming node, kind and name.

Better than Sedna, through the family: ``Pending`` until every worker runs (Sedna says
``Running`` at once); a deleted worker, Deployment or Service is made again (Sedna
counts a missing tracking pod as failed and fails the service for good); spec edits are
rolled out; a Deployment that has not reported yet is not a failure (Sedna issue 234).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sedna.runtime import ControllerContext, PodWorkloadController, WorkloadPlan, sedna_resource

from .workers import plan

RESOURCE = sedna_resource("objectsearchservices")


class ObjectSearchController(PodWorkloadController):
    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx, RESOURCE, label="object search service")

    def plan(self, owner: Mapping[str, Any]) -> WorkloadPlan:
        return plan(owner)
