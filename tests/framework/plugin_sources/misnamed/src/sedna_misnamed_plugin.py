"""A feature whose name differs from its entry point's."""

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
def sedna_features() -> list[Feature]:
    return [Feature("mis_named", ["Model"], _Nothing)]
