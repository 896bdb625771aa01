"""Records that it was imported, to prove disabled plugins are never imported."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sedna.runtime import Feature, hookimpl

_mark = os.environ.get("SEDNA_MARKER_FILE")
if _mark:
    Path(_mark).write_text("imported")


class _Nothing:
    def __init__(self, ctx: object) -> None:
        pass

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


@hookimpl
def sedna_features() -> list[Feature]:
    return [Feature("marker", ["MarkerJob"], _Nothing)]


@hookimpl
def sedna_adjust_pod(pod: dict[str, Any], job: Any, worker_type: str) -> None:
    pod.setdefault("spec", {}).setdefault("tolerations", []).append(
        {"key": "sedna.io/edge", "operator": "Exists", "effect": "NoSchedule"}
    )
