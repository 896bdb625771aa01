"""The ObjectTrackingService controller (our addition: Sedna has none for this kind).

Service-style status as for ObjectSearchService: ``startTime``, ``active`` (active
tracking pods plus an active ReID Deployment), ``failed``, conditions ``Pending``,
``Running`` and the terminal ``Failed``; deleted workers are made again and spec
edits rolled out. No LC report is accepted for this kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sedna.runtime import ControllerContext, PodWorkloadController, WorkloadPlan, sedna_resource

from .workers import plan

RESOURCE = sedna_resource("objecttrackingservices")


class ObjectTrackingController(PodWorkloadController):
    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx, RESOURCE, label="object tracking service")

    def plan(self, owner: Mapping[str, Any]) -> WorkloadPlan:
        return plan(owner)
