"""A hook implementation with a typo'd name: sedna_feature instead of sedna_features."""

from __future__ import annotations

from sedna.runtime import Feature, hookimpl


class _Nothing:
    def __init__(self, ctx: object) -> None:
        pass

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


@hookimpl
def sedna_feature() -> list[Feature]:
    return [Feature("typo", ["Model"], _Nothing)]
