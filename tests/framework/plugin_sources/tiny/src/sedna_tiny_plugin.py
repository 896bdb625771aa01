"""A minimal third-party feature plugin, installed into a temp dir by the tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from sedna.runtime import ControllerContext, Feature, hookimpl

EVENTS: list[str] = []


class TinyOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    greeting: str = "hello"
    repeat: int = 1


class TinyController:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        EVENTS.append(f"built:{ctx.options.greeting}:{ctx.workers}")

    def start(self) -> None:
        EVENTS.append("start")

    def stop(self) -> None:
        EVENTS.append("stop")


def _validate(options: Mapping[str, Any]) -> TinyOptions:
    return TinyOptions.model_validate(options)


@hookimpl
def sedna_features() -> list[Feature]:
    return [Feature("tiny", ["TinyJob"], TinyController, validate_options=_validate)]
