"""A hook implementation without @hookimpl: pluggy would never call it."""

from __future__ import annotations

from sedna.runtime import Feature


class _Nothing:
    def __init__(self, ctx: object) -> None:
        pass

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


def sedna_features() -> list[Feature]:
    return [Feature("unmarked", ["Model"], _Nothing)]
