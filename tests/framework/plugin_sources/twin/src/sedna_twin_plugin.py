"""A second distribution declaring the feature tiny, which sedna-tiny-plugin declares too."""

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
    return [Feature("tiny", ["Model"], _Nothing)]
