"""Finding plugins through entry points and turning gm.yaml's `features:` into features.

First-party features come in exactly this way; the core has no list of features.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import pluggy
from pydantic import ValidationError

from sedna.plugins import hookspecs
from sedna.plugins.hooks import HookError, Hooks
from sedna.plugins.kinds import (
    FIRST_PARTY,
    NO_CONTROLLER_NOTE,
    is_sedna_kind,
    sedna_kinds,
    would_reconcile,
)
from sedna.runtime.config import GMConfig, describe_error
from sedna.runtime.plugin_api import PROJECT, Feature, FeatureOptionsError

ENTRY_POINT_GROUP = "sedna.features"
_KIND = re.compile(r"[A-Z][A-Za-z0-9]*")


class PluginError(Exception):
    """A plugin cannot be used; the message names the plugin and the reason."""


@dataclass(frozen=True)
class DiscoveredPlugin:
    """An entry point as installed, read from metadata only (nothing imported)."""

    name: str
    value: str
    distribution: str
    version: str

    @classmethod
    def from_entry_point(cls, ep: metadata.EntryPoint) -> DiscoveredPlugin:
        dist = ep.dist
        return cls(
            name=ep.name,
            value=ep.value,
            distribution=dist.metadata["Name"] if dist is not None else "?",
            version=dist.version if dist is not None else "?",
        )


@dataclass
class LoadedFeature:
    feature: Feature
    plugin: str
    workers: int
    options: Any


@dataclass
class LoadedPlugins:
    hooks: Hooks
    discovered: list[DiscoveredPlugin]
    features: list[LoadedFeature] = field(default_factory=list)
    # installed features the config leaves off (not named, or switched off), sorted
    left_off: list[str] = field(default_factory=list)

    def feature(self, name: str) -> LoadedFeature:
        for f in self.features:
            if f.feature.name == name:
                return f
        raise KeyError(name)

    def reconciled_kinds(self) -> list[str]:
        """The kinds the enabled features claim."""
        return sorted({k for f in self.features for k in f.feature.kinds})

    def foreign_kinds(self) -> list[tuple[str, str, str]]:
        """(plugin, feature, kind) of each claimed kind that is not one of Sedna's.

        Such a kind must be served by a CRD of the cluster; that needs the API, so the
        manager checks it as soon as its client exists.
        """
        return [
            (f.plugin, f.feature.name, k)
            for f in self.features
            for k in f.feature.kinds
            if not is_sedna_kind(k)
        ]


def discover_plugins(group: str = ENTRY_POINT_GROUP) -> list[DiscoveredPlugin]:
    return _discovered(_Scan(group))


class _Scan:
    """One pass over the installed entry points of `group`, each read once.

    Every pass reads the entry points of every installed distribution, and describing
    one (its distribution's name and version) parses that distribution's metadata; the
    loader used to do both several times over on the way to ready.
    """

    def __init__(self, group: str) -> None:
        self.found = [(ep, DiscoveredPlugin.from_entry_point(ep)) for ep in _entry_points_of(group)]


def _entry_points_of(group: str) -> metadata.EntryPoints:
    return metadata.entry_points(group=group)


def _discovered(scan: _Scan) -> list[DiscoveredPlugin]:
    seen: dict[str, DiscoveredPlugin] = {}
    for ep, where in scan.found:
        seen.setdefault(ep.name, where)
    return sorted(seen.values(), key=lambda p: p.name)


def _entry_points(scan: _Scan) -> dict[str, tuple[metadata.EntryPoint, DiscoveredPlugin]]:
    found: dict[str, tuple[metadata.EntryPoint, DiscoveredPlugin]] = {}
    for ep, where in scan.found:
        found.setdefault(ep.name, (ep, where))
    return found


def _conflicting_entry_points(scan: _Scan) -> dict[str, list[DiscoveredPlugin]]:
    """Entry-point names that two different distributions (or targets) declare.

    One distribution seen twice on sys.path (an editable install next to its sources)
    is not a conflict; two distributions providing one feature name are, because which
    one `importlib.metadata` yields first is an accident of sys.path order.
    """
    by_name: dict[str, dict[tuple[str, str], DiscoveredPlugin]] = {}
    for ep, where in scan.found:
        by_name.setdefault(ep.name, {}).setdefault((where.distribution, where.value), where)
    return {name: list(seen.values()) for name, seen in by_name.items() if len(seen) > 1}


def new_plugin_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(hookspecs)
    return pm


def load_plugins(
    config: GMConfig,
    *,
    source: str = "gm.yaml",
    extra_plugins: Mapping[str, object] | None = None,
    group: str = ENTRY_POINT_GROUP,
    use_entry_points: bool = True,
) -> LoadedPlugins:
    """Import enabled plugins, collect their features and validate their options.

    Disabled features are blocked in pluggy before any entry point is loaded, so their
    modules are never imported. `extra_plugins` (name -> plugin object) are registered
    as if found through entry points; embedding applications and tests use them, and
    an embedding application may turn entry-point discovery off altogether.
    """
    pm = new_plugin_manager()
    scan = _Scan(group) if use_entry_points else None
    eps = _entry_points(scan) if scan is not None else {}
    extra = dict(extra_plugins or {})
    known = set(eps) | set(extra)
    conflicts = _conflicting_entry_points(scan) if scan is not None else {}
    for name, section in config.features.items():
        # Switching off a plugin that is not installed is harmless; asking for one is not.
        if name not in known and section.enabled:
            installed = ", ".join(sorted(known)) or "none"
            raise PluginError(
                f"{config.source_of(('features', name), source)}: features.{name}: "
                "no installed plugin provides this feature "
                f"(installed: {installed})"
            )
    for name in known:
        if not _enabled(config, name, handed=name in extra):
            pm.set_blocked(name)
    for name, declared in sorted(conflicts.items()):
        if not pm.is_blocked(name) and name not in extra:
            both = " and ".join(f"{d.distribution} {d.version} ({d.value})" for d in declared)
            raise PluginError(f"plugin {name}: feature {name} is declared by two plugins: {both}")

    for name, (ep, where) in sorted(eps.items()):
        if pm.is_blocked(name) or name in extra:
            continue
        try:
            plugin = ep.load()
        except Exception as exc:  # any import-time failure of a third-party module
            raise PluginError(
                f"plugin {name} ({where.distribution} {where.version}): cannot import "
                f"{ep.value}: {type(exc).__name__}: {exc}"
            ) from exc
        _register(pm, name, plugin, f"plugin {name} ({where.distribution} {where.version})")
    for name, plugin in extra.items():
        if not pm.is_blocked(name):
            _register(pm, name, plugin, f"plugin {name}")

    hooks = Hooks(pm)
    loaded = LoadedPlugins(
        hooks=hooks,
        discovered=_discovered(scan) if scan is not None else [],
        left_off=sorted(name for name in known if pm.is_blocked(name)),
    )
    try:
        pairs = hooks.features()
    except HookError as exc:  # names the plugin, the hook and the exception's type
        raise PluginError(str(exc)) from exc
    _check_features(pairs)
    for plugin_name, feature in pairs:
        section = config.feature(feature.name)
        if not _enabled(config, feature.name, handed=plugin_name in extra):
            continue
        options = _validate_options(config, source, plugin_name, feature, section.options)
        loaded.features.append(LoadedFeature(feature, plugin_name, section.workers, options))
    return loaded


def _enabled(config: GMConfig, name: str, *, handed: bool) -> bool:
    """Whether the plugin or feature `name` runs.

    A plugin handed to the loader (`extra_plugins`) was asked for by the embedding
    application or test: it runs unless its section switches it off, even when the
    config names other features. An installed one runs as `config.feature` says.
    """
    if handed:
        section = config.features.get(name)
        return section is None or section.enabled
    return config.feature(name).enabled


def _hook_names() -> set[str]:
    return {n for n in dir(hookspecs) if n.startswith("sedna_")}


def _register(pm: pluggy.PluginManager, name: str, plugin: object, who: str) -> None:
    """Register one plugin, refusing hook implementations that would never be called.

    pluggy accepts an implementation of an unknown hook (it may be specified later) and
    ignores an unmarked function; both are a typo or a forgotten `@hookimpl` in a
    sedna plugin, which would otherwise leave a feature silently missing.
    """
    hooks = _hook_names()
    for attr in sorted(dir(plugin)):
        if attr.startswith("__"):
            continue
        try:
            opts = pm.parse_hookimpl_opts(plugin, attr)
        except Exception:  # an attribute that cannot be read is not a hook implementation
            continue
        if opts is not None:
            hook = opts.get("specname") or attr
            if hook not in hooks:
                raise PluginError(
                    f"{who}: {hook} is not a sedna hook (hooks: {', '.join(sorted(hooks))})"
                )
            if opts.get("wrapper") or opts.get("hookwrapper"):
                # Hooks are called one implementation at a time, to name the one that fails.
                raise PluginError(f"{who}: {attr} is a hook wrapper; sedna hooks take none")
        elif attr in hooks and callable(getattr(plugin, attr, None)):
            raise PluginError(
                f"{who}: {attr} is not marked with @sedna.runtime.hookimpl, so it is never called"
            )
    try:
        pm.register(plugin, name=name)
    except (ValueError, pluggy.PluginValidationError) as exc:
        raise PluginError(f"{who}: invalid plugin: {exc}") from exc


def _check_features(pairs: Iterable[tuple[str, Feature]]) -> None:
    names: dict[str, str] = {}
    kinds: dict[str, tuple[str, str]] = {}
    for plugin_name, feature in pairs:
        if not isinstance(feature, Feature):
            raise PluginError(
                f"plugin {plugin_name}: sedna_features returned {type(feature).__name__}, "
                "expected sedna.runtime.Feature"
            )
        if feature.name in names:
            raise PluginError(
                f"plugin {plugin_name}: feature {feature.name} is already provided by plugin "
                f"{names[feature.name]}"
            )
        if feature.name != plugin_name:
            raise PluginError(
                f"plugin {plugin_name}: declares feature {feature.name!r}, but a feature's name "
                f"must equal its entry point's ({plugin_name!r}), the key of its section in "
                "gm.yaml"
            )
        for kind in feature.kinds:
            if not isinstance(kind, str) or not _KIND.fullmatch(kind):
                raise PluginError(
                    f"plugin {plugin_name}: feature {feature.name} names kind {kind!r}, "
                    "which is not a kind (a CamelCase name such as IncrementalLearningJob)"
                )
        names[feature.name] = plugin_name
        for kind in feature.kinds:
            if kind in kinds:
                other_plugin, other_feature = kinds[kind]
                raise PluginError(
                    f"plugin {plugin_name}: feature {feature.name} claims kind {kind}, "
                    f"already claimed by feature {other_feature} of plugin {other_plugin}"
                )
            kinds[kind] = (plugin_name, feature.name)


def _validate_options(
    config: GMConfig,
    source: str,
    plugin_name: str,
    feature: Feature,
    options: Mapping[str, Any],
) -> Any:
    merged = {**feature.default_options, **options}

    def where(key: str) -> str:
        """`source: features.<name>.<key>`, or the variable that set the key."""
        loc = ("features", feature.name, *(key.split(".") if key else ()))
        return f"{config.source_of(loc, source)}: {'.'.join(loc)}"

    if feature.validate_options is None:
        if options:
            key = sorted(options)[0]
            raise PluginError(
                f"{where(key)}: unknown option (plugin {plugin_name} takes no options)"
            )
        return merged
    try:
        return feature.validate_options(merged)
    except FeatureOptionsError as exc:
        raise PluginError(f"{where(exc.key)}: {exc.reason} (plugin {plugin_name})") from None
    except ValidationError as exc:
        lines = []
        for e in exc.errors():
            path = ".".join(str(p) for p in e.get("loc", ()))
            text = describe_error(e)
            reason = text[len(path) + 2 :] if path else text
            lines.append(f"{where(path)}: {reason} (plugin {plugin_name})")
        raise PluginError("\n".join(lines)) from None
    except Exception as exc:
        raise PluginError(
            f"{where('')}: plugin {plugin_name} rejected its options: {type(exc).__name__}: {exc}"
        ) from None


@dataclass(frozen=True)
class PluginRow:
    name: str
    distribution: str
    version: str
    kinds: str
    enabled: str
    kind_list: tuple[str, ...] = ()


def describe_plugins(config: GMConfig, group: str = ENTRY_POINT_GROUP) -> list[PluginRow]:
    """One row per installed plugin for `sedna-gm plugins`.

    Listing kinds means importing the plugin, so this imports disabled plugins too (in
    a throw-away plugin manager); running the GM never does. An import failure shows
    in the kinds column instead of aborting the listing.
    """
    rows = []
    for name, (ep, where) in sorted(_entry_points(_Scan(group)).items()):
        kinds: list[str] = []
        try:
            pm = new_plugin_manager()
            pm.register(ep.load(), name=name)
            kinds = sorted({k for _, f in Hooks(pm).features() for k in f.kinds})
            kinds_text = ",".join(kinds) or "-"
        except HookError as exc:  # names the hook and the exception's type already
            kinds_text = f"error: {exc.hook} failed: {exc.reason}"
        except Exception as exc:
            kinds_text = f"error: {type(exc).__name__}: {exc}"
        enabled = "yes" if config.feature(name).enabled else "no"
        rows.append(
            PluginRow(name, where.distribution, where.version, kinds_text, enabled, tuple(kinds))
        )
    return rows


@dataclass(frozen=True)
class KindRow:
    kind: str
    feature: str  # the installed feature that claims it, "-" if none
    note: str


def describe_kinds(rows: Iterable[PluginRow]) -> list[KindRow]:
    """For each of Sedna's kinds, the installed feature that reconciles it (`sedna-gm plugins`)."""
    claims: dict[str, list[PluginRow]] = {}
    for row in rows:
        for kind in row.kind_list:
            claims.setdefault(kind, []).append(row)
    installed = {r.name for r in rows}
    out = []
    for kind in sedna_kinds():
        owners = claims.get(kind, [])
        if owners:
            feature = ",".join(r.name for r in owners)
            note = "" if any(r.enabled == "yes" for r in owners) else "disabled"
        elif FIRST_PARTY.get(kind) is None:
            feature, note = "-", NO_CONTROLLER_NOTE
        else:
            feature, note = "-", would_reconcile(kind, installed)
        out.append(KindRow(kind, feature, note))
    return out
