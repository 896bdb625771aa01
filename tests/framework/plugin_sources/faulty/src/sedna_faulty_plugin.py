"""A plugin whose hook named by SEDNA_FAULTY_HOOK fails, installed into a temp dir by the tests.

`features` raises, `features-none` returns None, `configure` and `startup` raise.
"""

from __future__ import annotations

import os

from sedna.runtime import ControllerContext, Feature, RuntimeContainer, hookimpl


def _fails(hook: str) -> bool:
    return os.environ.get("SEDNA_FAULTY_HOOK") == hook


class FaultyController:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


@hookimpl
def sedna_features() -> list[Feature] | None:
    if _fails("features"):
        raise RuntimeError("features boom")
    if _fails("features-none"):
        return None
    return [Feature("faulty", [], FaultyController)]


@hookimpl
def sedna_configure_container(container: RuntimeContainer) -> None:
    if _fails("configure"):
        raise ValueError("configure boom")


@hookimpl
def sedna_startup(context: ControllerContext) -> None:
    if _fails("startup"):
        raise KeyError("startup boom")
