"""`DeclarativeFeature`: a feature declared as handlers, indexes and their kinds.

The declaration is all there is: the `Feature` (kinds, factory), its RBAC and its
controllers are derived from it. The kinds with handlers or indexes get list and
watch; a kind whose handlers may return a status (they are not annotated `-> None`)
gets `get` (the re-read after a 409 Conflict) and `<plural>/status` `update` (the
status write is a PUT; nothing is patched, so `patch` is not asked for).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from sedna.runtime.kube import Resource
from sedna.runtime.plugin_api import (
    ApiAccess,
    Feature,
    FeatureController,
    OptionsValidator,
    hookimpl,
)

from .handlers import (
    ChangeHandler,
    DeleteHandler,
    Event,
    Handler,
    ObjectHandler,
    ReportHandler,
    writes_status,
)
from .index import Index, IndexFunction

if TYPE_CHECKING:
    from sedna.runtime.context import ControllerContext

__all__ = ["DeclarativeFeature"]

OH = TypeVar("OH", bound=ObjectHandler)
CH = TypeVar("CH", bound=ChangeHandler)
DH = TypeVar("DH", bound=DeleteHandler)
RH = TypeVar("RH", bound=ReportHandler)


class DeclarativeFeature:
    """A feature made of handlers: `@feature.on_add(MODELS)`, `@feature.reconcile(...)`.

    Declare at module level, then publish it with `sedna_features = feature.hook()`
    in the plugin's entry-point module. Each declared kind runs in a `Controller` on its
    shared informer (one key per object, level-triggered, Sedna's backoff); see
    `docs/concepts/declarative.md` for when each handler runs.
    """

    def __init__(
        self,
        name: str,
        *,
        description: str = "",
        validate_options: OptionsValidator | None = None,
        default_options: Mapping[str, Any] | None = None,
        access: Sequence[ApiAccess] = (),
    ) -> None:
        """`access` adds what handlers call by hand (e.g. Secrets read through `ctx.runtime`)."""
        self.name = name
        self.description = description
        self.validate_options = validate_options
        self.default_options = dict(default_options or {})
        self.extra_access = tuple(access)
        self.handlers: list[Handler] = []
        self.indexes: list[Index] = []
        self.reports: list[tuple[Resource, ReportHandler]] = []

    # -- declaring -----------------------------------------------------------

    def _register(self, event: Event, res: Resource, function: Callable[..., Any]) -> None:
        name = getattr(function, "__name__", repr(function))
        writes = event != "delete" and writes_status(function)
        self.handlers.append(Handler(event, res, function, name, writes))

    def on_add(self, res: Resource) -> Callable[[OH], OH]:
        """`fn(obj, ctx) -> status | None` for an object its handlers have not seen yet."""

        def register(function: OH) -> OH:
            self._register("add", res, function)
            return function

        return register

    def on_change(self, res: Resource) -> Callable[[CH], CH]:
        """`fn(old, new, ctx) -> status | None` when anything but the status changed."""

        def register(function: CH) -> CH:
            self._register("change", res, function)
            return function

        return register

    def on_delete(self, res: Resource) -> Callable[[DH], DH]:
        """`fn(last_known, ctx) -> None` once an object is gone."""

        def register(function: DH) -> DH:
            self._register("delete", res, function)
            return function

        return register

    def reconcile(self, res: Resource) -> Callable[[OH], OH]:
        """`fn(obj, ctx) -> status | None` in every sync of a live object: on add, on
        change, on resync, and when an object related to it through an index changes."""

        def register(function: OH) -> OH:
            self._register("reconcile", res, function)
            return function

        return register

    def on_report(self, res: Resource) -> Callable[[RH], RH]:
        """`fn(msg, ctx) -> None` for each LC report on an object of `res` (an
        `UpstreamMessage`), in the message layer's report workers, which retry a
        transient API error and log any other. It writes what it writes by hand
        (declare that access)."""

        def register(function: RH) -> RH:
            if any(kind == res for kind, _ in self.reports):
                raise ValueError(f"feature {self.name}: a second report handler for {res.kind}")
            self.reports.append((res, function))
            return function

        return register

    def index(self, source: Resource, *, of: Resource) -> Callable[[IndexFunction], Index]:
        """`fn(source_obj) -> names of `of` objects it relates to` becomes an `Index`.

        Names are in the source object's namespace; a value with a `/` is a full
        `namespace/name` key. A change of a source object (old and new names) re-runs
        the `reconcile` handlers of every `of` object it names.
        """

        def register(function: IndexFunction) -> Index:
            name = f"{self.name}:{getattr(function, '__name__', 'index')}"
            if any(ix.name == name for ix in self.indexes):
                raise ValueError(f"feature {self.name}: index {name} is declared twice")
            index = Index(name, source, of, function)
            self.indexes.append(index)
            return index

        return register

    # -- what is derived -----------------------------------------------------

    def kinds(self) -> list[Resource]:
        """The kinds with handlers, in declaration order."""
        handled = [h.resource for h in self.handlers] + [res for res, _ in self.reports]
        return list(dict.fromkeys(handled))

    def access(self) -> list[ApiAccess]:
        """The RBAC the declaration needs, plus the `access` given by hand."""
        status = {h.resource for h in self.handlers if h.writes_status}
        watched = dict.fromkeys([*self.kinds(), *(ix.source for ix in self.indexes)])
        out = [
            ApiAccess(
                res.group,
                [res.plural],
                ["get", "list", "watch"] if res in status else ["list", "watch"],
            )
            for res in watched
        ]
        out += [
            ApiAccess(res.group, [f"{res.plural}/status"], ["update"])
            for res in self.kinds()
            if res in status
        ]
        return [*out, *self.extra_access]

    def check(self) -> None:
        """Refuse a declaration that cannot run, when the plugin is loaded."""
        if not self.handlers and not self.reports:
            raise ValueError(f"feature {self.name}: no handlers declared")
        kinds = [h.resource for h in self.handlers]
        for index in self.indexes:
            if index.target not in kinds:
                raise ValueError(
                    f"feature {self.name}: index {index.name} relates to {index.target.kind},"
                    " which has no handlers to re-run"
                )

    def feature(self) -> Feature:
        """The `Feature` this declaration makes (what `sedna_features` returns)."""
        self.check()
        return Feature(
            name=self.name,
            kinds=[res.kind for res in self.kinds()],
            factory=self._build,
            validate_options=self.validate_options,
            description=self.description,
            default_options=self.default_options,
            access=self.access(),
        )

    def hook(self) -> Callable[[], Sequence[Feature]]:
        """The plugin's `sedna_features` hook: `sedna_features = feature.hook()`."""

        @hookimpl
        def sedna_features() -> Sequence[Feature]:
            return [self.feature()]

        return sedna_features

    def _build(self, ctx: ControllerContext) -> FeatureController:
        from .controller import DeclarativeController

        return DeclarativeController(ctx, self.name, self.handlers, self.indexes, self.reports)
